import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfigModule } from '../config/config.module';
import { DatabaseConnectionModule } from '../database/database.module';
import { KeyDirectory } from '../keys/key-directory';
import { KeysRepository } from '../keys/keys.repository';
import { KeysService } from '../keys/keys.service';
import { ProxyKeyEntity } from '../keys/proxy-key.entity';

/**
 * The key services without HTTP: the same rules as the admin API, on the database connection alone (no job
 * queue, no metrics, no workers).
 */
@Module({
  imports: [AppConfigModule, DatabaseConnectionModule, TypeOrmModule.forFeature([ProxyKeyEntity])],
  providers: [KeysRepository, KeyDirectory, KeysService],
})
export class KeysCliModule {}
