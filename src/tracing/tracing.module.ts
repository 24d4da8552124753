import { Global, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import { Tracing, tracing } from './tracing';

/** Flushes the spans still buffered when the application closes (after the workers' own shutdown hooks). */
@Injectable()
export class TracingShutdown implements OnApplicationShutdown {
  constructor(private readonly traces: Tracing) {}

  async onApplicationShutdown(): Promise<void> {
    await this.traces.shutdown();
  }
}

/** The process's Tracing (started by main.ts before Nest, or by a test) for whoever injects it, and its flush. */
@Global()
@Module({
  providers: [{ provide: Tracing, useValue: tracing }, TracingShutdown],
  exports: [Tracing],
})
export class TracingModule {}
