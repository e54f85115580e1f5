import { SignJWT } from 'jose';

export interface MintOptions {
  sub: string;
  scopes: readonly string[];
  /** Lifetime, as jose reads it ("1h", "30d") or seconds. @default "1h" */
  ttl?: string | number;
  issuer?: string | undefined;
  audience?: string | undefined;
}

/** Signs an HS256 bearer token with the shared secret. */
export function mintToken(secret: string, options: MintOptions): Promise<string> {
  let jwt = new SignJWT({ scope: options.scopes.join(' ') })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(options.sub)
    .setIssuedAt()
    .setExpirationTime(
      typeof options.ttl === 'number'
        ? Math.floor(Date.now() / 1000) + options.ttl
        : (options.ttl ?? '1h'),
    );
  if (options.issuer) jwt = jwt.setIssuer(options.issuer);
  if (options.audience) jwt = jwt.setAudience(options.audience);
  return jwt.sign(new TextEncoder().encode(secret));
}
