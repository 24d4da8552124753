import { Module } from '@nestjs/common';
import { ModelsController } from './models.controller';

/** OpenAI's model listing over the key's chain. */
@Module({ controllers: [ModelsController] })
export class ModelsModule {}
