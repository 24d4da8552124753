import { IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import { YamlText } from './yaml-data';

/** Longest in-flight count an account may declare; a bound on a typo, far above any vendor's tier. */
export const MAX_ACCOUNT_CONCURRENCY = 10000;

/** One credential behind a provider (decisions §7): the provider's name, breaker per account, its own key. */
export class AccountConfig {
  @YamlText()
  @IsString()
  @Matches(/^[a-z0-9][a-z0-9_-]{0,62}$/, { message: 'name must be lowercase letters, digits, - or _' })
  name!: string;

  /** Required, but may interpolate to nothing: the account is then left out with a warning. */
  @YamlText()
  @IsString({ message: 'api_key must be a string (use ${ENV_VAR})' })
  api_key!: string;

  @IsOptional()
  @YamlText()
  @IsString()
  group_id?: string;

  /** Share of the calls among the accounts that can take one (default 1). */
  @IsOptional()
  @IsInt({ message: 'weight must be a whole number' })
  @Min(1, { message: 'weight must be at least 1' })
  @Max(1000, { message: 'weight must be at most 1000' })
  weight?: number;

  /** Calls in flight at once on this account, per replica (default: no limit). */
  @IsOptional()
  @IsInt({ message: 'max_concurrency must be a whole number' })
  @Min(1, { message: 'max_concurrency must be at least 1' })
  @Max(MAX_ACCOUNT_CONCURRENCY, { message: `max_concurrency must be at most ${MAX_ACCOUNT_CONCURRENCY}` })
  max_concurrency?: number;
}

/** An account as the gateway uses it; `apiKey` is never logged, shown or put in a metric. */
export interface ResolvedAccount {
  name: string;
  apiKey: string;
  /** The account's own `group_id`, else the provider's. */
  groupId: string | null;
  weight: number;
  /** null: no limit. */
  maxConcurrency: number | null;
}

/** The circuit (and adapter) of one account: `provider/account` (names cannot hold a `/`, so none is a provider's). */
export const accountCircuit = (provider: string, account: string): string => `${provider}/${account}`;

/** The provider a circuit belongs to: itself, or the provider of an account's `provider/account`. */
export const providerOfCircuit = (circuit: string): string => {
  const slash = circuit.indexOf('/');
  return slash < 0 ? circuit : circuit.slice(0, slash);
};

/**
 * A provider's accounts with their keys interpolated: those whose key is empty are left out (a warning each);
 * `fail` on a duplicate name. An empty result means the provider itself is left out.
 */
export function resolveAccounts(
  accounts: AccountConfig[],
  provider: { name: string; groupId: string | null },
  at: string,
  warnings: string[],
  fail: (detail: string) => never,
): ResolvedAccount[] {
  const seen = new Set<string>();
  const out: ResolvedAccount[] = [];
  accounts.forEach((a, j) => {
    if (seen.has(a.name)) fail(`${at}.accounts[${j}].name: duplicate account name '${a.name}'`);
    seen.add(a.name);
    const apiKey = a.api_key.trim();
    if (!apiKey) {
      warnings.push(`account '${a.name}' of provider '${provider.name}' left out: its api_key is empty`);
      return;
    }
    out.push({
      name: a.name,
      apiKey,
      groupId: a.group_id?.trim() ? a.group_id.trim() : provider.groupId,
      weight: a.weight ?? 1,
      maxConcurrency: a.max_concurrency ?? null,
    });
  });
  return out;
}
