import {
  BadRequestException,
  CallHandler,
  ExecutionContext,
  Injectable,
  mixin,
  NestInterceptor,
  PayloadTooLargeException,
  Type,
} from '@nestjs/common';
import { AnyFilesInterceptor, type MulterModuleOptions } from '@nestjs/platform-express';
import type { Request } from 'express';
import { Observable } from 'rxjs';
import { DomainError } from '../errors/domain-error';

/** What multer's memory storage puts on the request (its typings are not among the compiled `types`). */
interface UploadedPart {
  fieldname: string;
  buffer: Buffer;
  size: number;
}

/** Nest words a multer limit error on one part as `<reason> - <part name>`; the part becomes `param`. */
function namedMulterError(err: unknown): unknown {
  if (!(err instanceof BadRequestException)) return err;
  const match = /^(.+?) - (.+)$/s.exec(err.message);
  if (!match) return err;
  const [, reason, part] = match;
  return new DomainError('invalid_value', `Invalid multipart part '${part}': ${reason.toLowerCase()}.`, {
    param: part,
  });
}

type UploadLimits = Omit<NonNullable<MulterModuleOptions['limits']>, 'files'> & { fileSize: number };

/**
 * A multipart form with one file, under `field`, read into memory and exposed as `@UploadedFile()`.
 * Unlike `FileInterceptor`, every refusal names the part at fault in `param`: a file under another
 * name (`unknown_field`), a second file or a text part under `field` (`invalid_value`), an oversize
 * file (`file_too_large`). multer's own errors for these lose the field's name on their way to the filter.
 */
export function SingleFileUpload(field: string, limits: UploadLimits): Type<NestInterceptor> {
  const withFile = new WeakSet<object>();
  const Multer = AnyFilesInterceptor({
    // two, so that a second file reaches the filter below instead of multer's anonymous count error
    limits: { ...limits, files: 2 },
    fileFilter: (
      req: object,
      file: { fieldname: string },
      accept: (error: Error | null, acceptFile: boolean) => void,
    ) => {
      if (file.fieldname !== field) {
        return accept(
          new DomainError('unknown_field', `Unknown file field '${file.fieldname}'; send the file as '${field}'.`, {
            param: file.fieldname,
          }),
          false,
        );
      }
      if (withFile.has(req))
        return accept(
          new DomainError('invalid_value', `Send exactly one file as '${field}'.`, { param: field }),
          false,
        );
      withFile.add(req);
      accept(null, true);
    },
  });

  @Injectable()
  class SingleFileUploadInterceptor implements NestInterceptor {
    private readonly multer = new Multer();

    async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
      let handled: Observable<unknown>;
      try {
        handled = await this.multer.intercept(context, next);
      } catch (err) {
        if (err instanceof PayloadTooLargeException) {
          const mib = Math.round((limits.fileSize / (1024 * 1024)) * 100) / 100;
          throw new DomainError('file_too_large', `The file '${field}' is larger than the ${mib} MiB limit.`, {
            param: field,
          });
        }
        throw namedMulterError(err);
      }
      const request = context.switchToHttp().getRequest<Request & { file?: UploadedPart; files?: UploadedPart[] }>();
      const body = request.body as Record<string, unknown> | undefined;
      if (body?.[field] !== undefined) {
        throw new DomainError('invalid_value', `'${field}' must be a file part (with a filename), not a text field.`, {
          param: field,
        });
      }
      request.file = request.files?.[0];
      return handled;
    }
  }
  return mixin(SingleFileUploadInterceptor);
}
