import { Injectable } from '@nestjs/common';

/** Whether the process has begun to shut down (SIGTERM): from then on it is not ready for traffic. */
@Injectable()
export class ShutdownState {
  private draining = false;

  get isDraining(): boolean {
    return this.draining;
  }

  begin(): void {
    this.draining = true;
  }
}
