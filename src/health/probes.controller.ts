import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiResponse, ApiTags } from '@nestjs/swagger';
import { Public } from '../common/http/route-access';
import { ErrorResponseDto } from '../common/http/api-errors.decorator';
import { ProbeResultDto } from './dto/probe-result.dto';
import { Readiness } from './readiness.service';

/** Liveness and readiness for orchestrators and load balancers: outside /v1, no credentials. */
@ApiTags('operations')
@Public()
@Controller()
export class ProbesController {
  constructor(private readonly readiness: Readiness) {}

  /** Liveness: 200 while the process runs (nothing else is checked, so a database outage never restarts it). */
  @Get('healthz')
  @Header('Cache-Control', 'no-store')
  @ApiOkResponse({ description: 'The process is up.', type: ProbeResultDto })
  healthz(): Promise<ProbeResultDto> {
    return this.readiness.live();
  }

  /** Readiness: the database answers, migrations are applied, the job queue runs and the process is not shutting down. */
  @Get('readyz')
  @Header('Cache-Control', 'no-store')
  @ApiOkResponse({ description: 'Ready for traffic.', type: ProbeResultDto })
  @ApiResponse({
    status: 503,
    type: ErrorResponseDto,
    description: 'Not ready (`not_ready`): the message names what is down.',
  })
  readyz(): Promise<ProbeResultDto> {
    return this.readiness.ready();
  }
}
