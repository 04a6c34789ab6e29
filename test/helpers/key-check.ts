/**
 * "Is this key accepted?" as the browser tests ask it. Until the gateway is merged the answer comes
 * from AccountsPort.authenticate, which is what the gateway calls. To ask a real gateway instead:
 *
 * - out of process: start a gateway whose FACECOMPUTE_DATA_DIR (or FACECOMPUTE_DATABASE_URL) is the
 *   one the test console uses (FACECOMPUTE_TEST_BROWSER_DATA_DIR) and set FACECOMPUTE_TEST_GATEWAY_URL;
 * - in process: pass `gatewayUrl` from a gateway built on the same store.
 *
 * A compute call with an accepted key fails for other reasons (an empty body is invalid_request), so
 * only `401 invalid_api_key` means refused, and no free call is spent.
 */
import type { AccountsPort, KeyKind } from '../../src/accounts/index.js';

export interface KeyCheck {
  accepted(key: string, kind: KeyKind): Promise<boolean>;
  via: string;
}

export function createKeyCheck(port: AccountsPort, gatewayUrl = process.env['FACECOMPUTE_TEST_GATEWAY_URL']): KeyCheck {
  if (gatewayUrl) {
    const base = gatewayUrl.replace(/\/+$/, '');
    return {
      via: `gateway ${base}`,
      async accepted(key, kind) {
        if (kind !== 'rest') return (await viaPort(port, key, kind));
        const res = await fetch(`${base}/verify`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{}' });
        const body = (await res.json()) as { error?: string };
        return !(res.status === 401 && body.error === 'invalid_api_key');
      },
    };
  }
  return { via: 'AccountsPort.authenticate', accepted: (key, kind) => viaPort(port, key, kind) };
}

async function viaPort(port: AccountsPort, key: string, kind: KeyKind): Promise<boolean> {
  try {
    await port.authenticate(key, kind);
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === 'invalid_api_key') return false;
    throw err;
  }
}
