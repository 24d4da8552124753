import { Controller, Get, Header } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiProduces, ApiTags } from '@nestjs/swagger';
import { Registry } from 'prom-client';
import { AdminOnly } from '../common/http/route-access';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { MetricsService } from './metrics.service';

/** Prometheus scrape target, behind the admin token (the same port as the API). */
@ApiTags('operations')
@ApiBearerAuth('admin')
@AdminOnly()
@ApiErrors(401, 403)
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  /** This replica's metrics in the Prometheus text format. */
  @Get()
  @Header('Content-Type', Registry.PROMETHEUS_CONTENT_TYPE)
  @Header('Cache-Control', 'no-store')
  @ApiProduces(Registry.PROMETHEUS_CONTENT_TYPE)
  @ApiOkResponse({ description: 'Prometheus text exposition format 0.0.4.', schema: { type: 'string' } })
  scrape(): Promise<string> {
    return this.metrics.render();
  }
}
