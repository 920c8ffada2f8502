/**
 * The two small pages a mailed link opens. A GET only shows a form; the token is used when the
 * person presses its button (a POST), because mail scanners fetch links before anyone reads them.
 */

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}button{font-size:1rem;padding:.5rem 1rem}input{font-size:1rem;padding:.4rem;width:100%;box-sizing:border-box;margin:.5rem 0 1rem}</style>
</head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;
}

/** The page of a verification link: one button that posts the token. */
export function verifyEmailPage(token: string): string {
  return page(
    "Verify your e-mail address",
    `<p>Press the button to confirm that this address is yours.</p>
<form method="post" action="/api/auth/verify-email"><input type="hidden" name="token" value="${escapeHtml(token)}"><button type="submit">Verify my address</button></form>`,
  );
}

/** The page of a reset link: the new password, posted with the token. */
export function passwordResetPage(token: string): string {
  return page(
    "Choose a new password",
    `<p>At least 8 characters, with an upper-case letter and a digit.</p>
<form method="post" action="/api/auth/password-reset/confirm"><input type="hidden" name="token" value="${escapeHtml(token)}">
<label>New password<input type="password" name="password" autocomplete="new-password" required minlength="8"></label>
<button type="submit">Set password</button></form>`,
  );
}

/** What a form post answers: done, or what went wrong (the API's own message). */
export function resultPage(title: string, message: string): string {
  return page(title, `<p>${escapeHtml(message)}</p>`);
}

/** Pages carry tokens: no caching, no referrer, no framing, no script. */
export const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
} as const;
