import { plainToInstance, Type } from 'class-transformer';
import {
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateNested,
  ValidationError,
  validateSync,
} from 'class-validator';
import { readFileSync } from 'node:fs';
import { AccountConfig, resolveAccounts, type ResolvedAccount } from './accounts';
import { CHAIN_NOT_EMPTY, ChainStepDto } from './chain-step.dto';
import { ContinuationMode, IsContinuation } from './continuation';
import { ConductSettings } from './conduct.dto';
import { KIND_TRAITS, PROVIDER_KINDS } from './provider-kinds';
import type { Capability, ProviderKind } from './provider-kinds';
import { YamlText, yamlData } from './yaml-data';

/** A provider of the YAML file; its conduct settings (timeouts, retries) are ConductSettings', each a step may override. */
export class ProviderConfig extends ConductSettings {
  @YamlText()
  @IsString()
  @Matches(/^[a-z0-9][a-z0-9_-]{0,62}$/, { message: 'name must be lowercase letters, digits, - or _' })
  name!: string;

  @IsIn(PROVIDER_KINDS, { message: `kind must be one of ${PROVIDER_KINDS.join(', ')}` })
  kind!: ProviderKind;

  @IsOptional()
  @IsUrl(
    { require_tld: false, require_protocol: true, protocols: ['http', 'https'] },
    { message: 'base_url must be an http(s) URL' },
  )
  base_url?: string;

  @IsOptional()
  @YamlText()
  @IsString()
  api_key?: string;

  @IsOptional()
  @YamlText()
  @IsString()
  group_id?: string;

  /** Longest a streamed upstream body (SSE, audio) may take once its headers came, however it trickles; default 10 min. */
  @IsOptional()
  @IsInt()
  @Min(1000)
  @Max(21600000)
  stream_total_timeout_ms?: number;

  /**
   * Raw voice ids of the upstream account (cloned or designed outside the gateway) that clients may name;
   * any other id that is not a built-in voice is refused (no consent covers it).
   */
  @IsOptional()
  @IsArray()
  @ArrayUnique()
  @YamlText()
  @IsString({ each: true })
  @MinLength(1, { each: true })
  allowed_voice_ids?: string[];

  /** How this provider continues a stream that broke on an earlier step (decisions §3); default by kind. */
  @IsOptional()
  @IsContinuation()
  continuation?: ContinuationMode[];

  /** Several credentials behind this provider (decisions §7); instead of `api_key`. */
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1, { message: 'accounts must list at least one account (or be left out)' })
  @ValidateNested({ each: true })
  @Type(() => AccountConfig)
  accounts?: AccountConfig[];

  /** Restricts what the provider is used for (default: everything its kind can do). */
  @IsOptional()
  @IsArray()
  @ArrayUnique()
  @IsIn(['chat', 'speech'], { each: true })
  capabilities?: Capability[];
}

export class BootstrapKeyConfig {
  @YamlText()
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  name!: string;

  @IsString()
  @Matches(/^sk-svc-[0-9A-Za-z]{32,}$/, { message: 'secret must be sk-svc- followed by at least 32 base62 characters' })
  secret!: string;

  @IsArray()
  @ArrayMinSize(1, { message: CHAIN_NOT_EMPTY })
  @ValidateNested({ each: true })
  @Type(() => ChainStepDto)
  chain!: ChainStepDto[];
}

export class GatewayFile {
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => ProviderConfig)
  providers!: ProviderConfig[];

  @IsOptional()
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => BootstrapKeyConfig)
  keys?: BootstrapKeyConfig[];
}

/** A provider as the rest of the service sees it: defaults filled in, capabilities resolved. */
export interface ResolvedProvider {
  name: string;
  kind: ProviderKind;
  baseUrl: string | null;
  apiKey: string | null;
  groupId: string | null;
  timeoutMs: number | null;
  capabilities: Capability[];
  /** `stream_idle_timeout_ms` when the YAML sets it; CONDUCT_DEFAULTS otherwise (as the next three). */
  streamIdleTimeoutMs?: number;
  /** `first_token_timeout_ms`, `retries`, `retry_after_max_ms` when the YAML sets them. */
  firstTokenTimeoutMs?: number;
  retries?: number;
  retryAfterMaxMs?: number;
  /** `stream_total_timeout_ms` when the YAML sets it; the HTTP adapters' default (10 min) otherwise. */
  streamTotalTimeoutMs?: number;
  /** Raw upstream voice ids (not built-in) that requests may name (`allowed_voice_ids`); none when unset. */
  allowedVoiceIds?: string[];
  /** `continuation` when the YAML sets it; the kind's default (src/config/continuation.ts) otherwise. */
  continuation?: ContinuationMode[];
  /** `queue_timeout_ms` when the YAML sets it; CONDUCT_DEFAULTS otherwise. */
  queueTimeoutMs?: number;
  /** The accounts whose key is set (decisions §7); absent for a provider with one `api_key`. */
  accounts?: ResolvedAccount[];
}

/** A provider the file declares but the gateway left out (its api_key interpolated to nothing). */
export interface LeftOutProvider {
  name: string;
  kind: ProviderKind;
  reason: string;
}

/** The validated gateway configuration. Injected wherever providers or bootstrap keys are needed. */
export class GatewayConfig {
  constructor(
    readonly providers: ResolvedProvider[],
    readonly bootstrapKeys: BootstrapKeyConfig[],
    readonly warnings: string[] = [],
    readonly leftOut: LeftOutProvider[] = [],
  ) {}

  provider(name: string): ResolvedProvider | undefined {
    return this.providers.find((p) => p.name === name);
  }

  /** Why a provider a chain step names is not configured (left out, or not in the file at all); null when it is. */
  whyNotConfigured(name: string): string | null {
    if (this.provider(name)) return null;
    const leftOut = this.leftOut.find((p) => p.name === name);
    return leftOut ? leftOut.reason : 'it is not in the gateway configuration';
  }
}

export class GatewayConfigError extends Error {}

function describe(errors: ValidationError[], prefix: string): string[] {
  return errors.flatMap((e) => {
    const path = /^\d+$/.test(e.property)
      ? `${prefix}[${e.property}]`
      : prefix
        ? `${prefix}.${e.property}`
        : e.property;
    const own = Object.values(e.constraints ?? {}).map((m) => `${path}: ${m}`);
    return [...own, ...describe(e.children ?? [], path)];
  });
}

export function parseGatewayConfig(text: string, source: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const fail = (detail: string): never => {
    throw new GatewayConfigError(`Invalid gateway configuration ${source}: ${detail}`);
  };
  let raw: unknown;
  try {
    raw = yamlData(text, env);
  } catch (err) {
    return fail(`not valid YAML (${(err as Error).message.split('\n')[0]})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return fail('the top level must be a mapping with `providers:`');
  const file = plainToInstance(GatewayFile, raw);
  const errors = validateSync(file, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length > 0) return fail(describe(errors, '').join('; '));

  const warnings: string[] = [];
  const seen = new Set<string>();
  const providers: ResolvedProvider[] = [];
  const leftOut: LeftOutProvider[] = [];
  file.providers.forEach((p, i) => {
    if (seen.has(p.name)) fail(`providers[${i}].name: duplicate provider name '${p.name}'`);
    seen.add(p.name);
    const traits = KIND_TRAITS[p.kind];
    const apiKey = p.api_key?.trim() ? p.api_key.trim() : null;
    const groupId = p.group_id?.trim() ? p.group_id.trim() : null;
    let accounts: ResolvedAccount[] | undefined;
    if (p.accounts) {
      if (!traits.needsApiKey) fail(`providers[${i}].accounts: kind ${p.kind} takes no credentials, so no accounts`);
      if (p.api_key !== undefined)
        fail(`providers[${i}]: set either api_key or accounts, not both (an account has its own api_key)`);
      accounts = resolveAccounts(p.accounts, { name: p.name, groupId }, `providers[${i}]`, warnings, fail);
      if (accounts.length === 0) {
        warnings.push(`provider '${p.name}' (${p.kind}) left out: the api_key of every account is empty`);
        leftOut.push({ name: p.name, kind: p.kind, reason: 'the api_key of every account is empty' });
        return;
      }
    } else if (traits.needsApiKey && !apiKey) {
      warnings.push(`provider '${p.name}' (${p.kind}) left out: its api_key is empty`);
      leftOut.push({ name: p.name, kind: p.kind, reason: 'its api_key is empty' });
      return;
    }
    const unsupported = (p.capabilities ?? []).filter((c) => !traits.capabilities.includes(c));
    if (unsupported.length > 0)
      fail(`providers[${i}].capabilities: kind ${p.kind} cannot serve ${unsupported.join(', ')}`);
    providers.push({
      name: p.name,
      kind: p.kind,
      baseUrl: (p.base_url ?? traits.defaultBaseUrl)?.replace(/\/+$/, '') ?? null,
      apiKey,
      groupId,
      timeoutMs: p.timeout_ms ?? null,
      capabilities: p.capabilities ?? traits.capabilities,
      ...(p.stream_idle_timeout_ms !== undefined ? { streamIdleTimeoutMs: p.stream_idle_timeout_ms } : {}),
      ...(p.first_token_timeout_ms !== undefined ? { firstTokenTimeoutMs: p.first_token_timeout_ms } : {}),
      ...(p.retries !== undefined ? { retries: p.retries } : {}),
      ...(p.retry_after_max_ms !== undefined ? { retryAfterMaxMs: p.retry_after_max_ms } : {}),
      ...(p.stream_total_timeout_ms !== undefined ? { streamTotalTimeoutMs: p.stream_total_timeout_ms } : {}),
      ...(p.allowed_voice_ids ? { allowedVoiceIds: p.allowed_voice_ids } : {}),
      ...(p.continuation ? { continuation: p.continuation } : {}),
      ...(p.queue_timeout_ms !== undefined ? { queueTimeoutMs: p.queue_timeout_ms } : {}),
      ...(accounts ? { accounts } : {}),
    });
  });
  const declared = new Set(file.providers.map((p) => p.name));
  const keys = (file.keys ?? []).flatMap((key, i) => {
    key.chain.forEach((step, j) => {
      if (!declared.has(step.provider)) fail(`keys[${i}].chain[${j}].provider: no provider named '${step.provider}'`);
    });
    const chain = key.chain.filter((step) => providers.some((p) => p.name === step.provider));
    // like its providers, a key left with no step is left out with a warning (it could serve nothing)
    if (chain.length === 0) {
      warnings.push(`key '${key.name}' left out: every step of its chain names a left-out provider`);
      return [];
    }
    if (chain.length < key.chain.length) {
      const dropped = key.chain.flatMap((step, j) => (chain.includes(step) ? [] : [`chain[${j}] (${step.provider})`]));
      warnings.push(`key '${key.name}': ${dropped.join(', ')} dropped from its chain: the provider is left out`);
    }
    return [Object.assign(key, { chain })];
  });
  return new GatewayConfig(providers, keys, warnings, leftOut);
}

export function loadGatewayConfig(path: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new GatewayConfigError(
      `Cannot read gateway configuration ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  return parseGatewayConfig(text, path, env);
}
