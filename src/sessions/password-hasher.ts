import { Algorithm, hash, verify } from "@node-rs/argon2";

/**
 * argon2id with OWASP's first recommended setting (Password Storage Cheat Sheet): 19 MiB of memory,
 * 2 passes, 1 lane; 16-byte random salt, 32-byte tag. Stored as the PHC string argon2 writes
 * (`$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`), which carries its own parameters, so raising
 * them later leaves existing hashes verifiable.
 */
export const PASSWORD_HASH_PARAMETERS = { algorithm: Algorithm.Argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1, outputLen: 32 } as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, PASSWORD_HASH_PARAMETERS);
}

let dummy: Promise<string> | null = null;

/**
 * Whether `password` matches `phc`. Without a stored hash (no such user, or a user who never set a
 * password) it verifies against a dummy hash of the same cost and answers false, so a wrong address
 * takes as long as a wrong password and timing does not tell which addresses are registered.
 */
export async function verifyPassword(phc: string | null, password: string): Promise<boolean> {
  if (phc === null) {
    dummy ??= hashPassword("dummy password, never matches: the stored hash is absent");
    await verify(await dummy, password).catch(() => false);
    return false;
  }
  try {
    return await verify(phc, password);
  } catch {
    return false; // a malformed stored hash matches nothing
  }
}
