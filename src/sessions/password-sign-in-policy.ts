/**
 * Whether a tenant lets its users sign in with a password. Tenant SSO implements it
 * (`enforceForAllUsers`, spec 2.12): its refusal is the reason shown to the person.
 */
export interface PasswordSignInPolicy {
  refusal(tenantId: string): Promise<string | null>;
}

/** Until a tenant says otherwise, passwords are allowed everywhere. */
export const ALLOW_PASSWORD_SIGN_IN: PasswordSignInPolicy = { refusal: async () => null };
