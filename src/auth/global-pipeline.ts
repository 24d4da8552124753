import type { CanActivate, ExceptionFilter, Provider, Type } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { ApiErrorFilter } from '../common/errors/api-error.filter';
import { MultipartOnUploadRoutes } from '../common/http/upload-route';
import { createValidationPipe } from '../common/http/validation';
import { AuthGuard } from './auth.guard';

/**
 * The application's global request pipeline, written once: AppModule registers it, and the chat fast path,
 * which runs the same steps without Nest's machinery, checks on every request that the application's
 * global enhancers are still exactly these (and steps aside for Express otherwise).
 */
export const GLOBAL_GUARDS: readonly Type<CanActivate>[] = [AuthGuard, MultipartOnUploadRoutes];
export const GLOBAL_FILTERS: readonly Type<ExceptionFilter>[] = [ApiErrorFilter];

/** The APP_* providers of the pipeline above (the validation pipe is the one global pipe). */
export const globalPipelineProviders = (): Provider[] => [
  ...GLOBAL_FILTERS.map((useClass) => ({ provide: APP_FILTER, useClass })),
  { provide: APP_PIPE, useFactory: createValidationPipe },
  ...GLOBAL_GUARDS.map((useClass) => ({ provide: APP_GUARD, useClass })),
];
