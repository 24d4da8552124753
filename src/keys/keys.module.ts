import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { KeyDirectory } from './key-directory';
import { KeysBootstrap } from './keys.bootstrap';
import { KeysController } from './keys.controller';
import { KeysRepository } from './keys.repository';
import { KeysService } from './keys.service';
import { ProxyKeyEntity } from './proxy-key.entity';

@Module({
  imports: [TypeOrmModule.forFeature([ProxyKeyEntity])],
  controllers: [KeysController],
  providers: [KeysRepository, KeyDirectory, KeysService, KeysBootstrap],
  exports: [KeyDirectory, KeysService],
})
export class KeysModule {}
