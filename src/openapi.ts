import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';

/** The OpenAPI document, built the same way for /openapi.json, `npm run openapi` and the staleness test. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Voice consent, speech and failover gateway')
    .setDescription(
      'Gateway between applications and upstream AI providers: voice consent recordings, text-to-speech with ' +
        '`speech-02-hd`, and provider failover. Errors share one body: `{"error":{"message","type","param","code"}}`. ' +
        'Every response carries `x-svc-request-id`.',
    )
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'Proxy key secret (`sk-svc-…`)' }, 'proxy-key')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'Operator admin token (SVC_ADMIN_TOKEN)' }, 'admin')
    .build();
  return SwaggerModule.createDocument(app, config, { operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}` });
}
