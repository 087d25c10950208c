// Sign-in on AWS (docs/dashboard.md, "On AWS"): the Cognito user pool's hosted pages, the
// authorization code flow with PKCE for a public client (no secret in a browser). The ID token
// is kept in this tab's sessionStorage and sent as `Authorization: Bearer` to the data API,
// whose JWT authorizer checks it. Past half its life (an hour) the app trades the refresh token
// (kept beside it, valid 12 hours) for a new one before the next read, so an open page keeps
// reading; when that fails or a token is refused, the app signs in again (the hosted pages
// remember a recent sign-in). Locally there is no sign-in at all.

import { config } from "./config";

const SESSION = "switchyard.session";
const PENDING = "switchyard.signin";
const RECENT_MS = 30_000;

type Session = {
  idToken: string;
  expiresAt: number;
  email: string | null;
  signedInAt: number;
  /** When the ID token was issued (its life is from here to `expiresAt`). */
  issuedAt?: number;
  refreshToken?: string | null;
};
type Tokens = { id_token?: string; expires_in?: number; refresh_token?: string };
type Pending = { verifier: string; state: string; back: string };

function base64url(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function random(size: number): string {
  const bytes = new Uint8Array(size);
  crypto.getRandomValues(bytes);
  return base64url(bytes);
}

async function challenge(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

/** The token's claims, read for display only: the data API's authorizer is what checks it. */
function claims(token: string): Record<string, unknown> {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(part), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
  } catch {
    return {};
  }
}

function stored(): Session | null {
  try {
    return JSON.parse(sessionStorage.getItem(SESSION) ?? "null") as Session | null;
  } catch {
    return null;
  }
}

/** The token's life, as issued. */
function lifetime(current: Session): number {
  return current.expiresAt - (current.issuedAt ?? current.expiresAt - 3_600_000);
}

/** The session, while its token has more than a few seconds left (30 s, or a quarter of its
 * life when that is shorter). */
function session(): Session | null {
  const current = stored();
  const margin = current ? Math.min(30_000, lifetime(current) / 4) : 0;
  return current && current.expiresAt > Date.now() + margin ? current : null;
}

function keep(tokens: Tokens, refreshToken: string | null): void {
  const email = claims(tokens.id_token!).email;
  const now = Date.now();
  const next: Session = {
    idToken: tokens.id_token!,
    expiresAt: now + (tokens.expires_in ?? 3600) * 1000,
    email: typeof email === "string" ? email : null,
    signedInAt: now,
    issuedAt: now,
    refreshToken,
  };
  sessionStorage.setItem(SESSION, JSON.stringify(next));
}

let refreshing: Promise<void> | null = null;

/** A new ID token for the refresh token (Cognito's `refresh_token` grant); without one, or
 * refused (expired after 12 hours, revoked), the session keeps its token until it expires. */
async function refresh(current: Session): Promise<void> {
  const auth = config().auth!;
  try {
    const response = await fetch(new URL("/oauth2/token", auth.domain).toString(), {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        client_id: auth.clientId,
        refresh_token: current.refreshToken!,
      }).toString(),
    });
    const tokens = response.ok ? ((await response.json()) as Tokens) : null;
    if (tokens?.id_token) {
      keep(tokens, tokens.refresh_token ?? current.refreshToken ?? null);
      return;
    }
  } catch {
    // the sign-in's domain unreachable: as refused
  }
  sessionStorage.setItem(SESSION, JSON.stringify({ ...current, refreshToken: null }));
}

/** The headers a data API request needs, the token refreshed first when past half its life
 * (one refresh at a time, however many reads wait for it). */
export async function freshAuthHeaders(): Promise<Record<string, string>> {
  const current = stored();
  if (config().auth && current?.refreshToken && Date.now() > current.expiresAt - lifetime(current) / 2) {
    refreshing ??= refresh(current).finally(() => {
      refreshing = null;
    });
    await refreshing;
  }
  return authHeaders();
}

/** Who is signed in (their e-mail), or null: locally, or not yet. */
export function signedInAs(): string | null {
  return session()?.email ?? null;
}

/** The headers a data API request needs. */
export function authHeaders(): Record<string, string> {
  const current = session();
  return current ? { Authorization: `Bearer ${current.idToken}` } : {};
}

function redirectUri(): string {
  return window.location.origin + config().auth!.callbackPath;
}

/** To the hosted sign-in; back to the page the person was on. */
export async function signIn(): Promise<never> {
  const auth = config().auth!;
  const pending: Pending = {
    verifier: random(32),
    state: random(16),
    back: window.location.pathname + window.location.search,
  };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const url = new URL("/oauth2/authorize", auth.domain);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: auth.clientId,
    redirect_uri: redirectUri(),
    scope: auth.scopes,
    state: pending.state,
    code_challenge: await challenge(pending.verifier),
    code_challenge_method: "S256",
  }).toString();
  window.location.assign(url.toString());
  return new Promise<never>(() => {});
}

export function signOut(): void {
  const auth = config().auth;
  sessionStorage.removeItem(SESSION);
  if (!auth) return;
  const url = new URL("/logout", auth.domain);
  url.search = new URLSearchParams({
    client_id: auth.clientId,
    logout_uri: window.location.origin + auth.signOutPath,
  }).toString();
  window.location.assign(url.toString());
}

/** The callback page: trade the code for tokens, then show the page the person asked for. */
async function completeSignIn(): Promise<void> {
  const auth = config().auth!;
  const params = new URLSearchParams(window.location.search);
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? "null") as Pending | null;
  sessionStorage.removeItem(PENDING);
  if (params.get("error")) {
    throw new Error(`Sign-in failed: ${params.get("error_description") ?? params.get("error")}`);
  }
  const code = params.get("code");
  if (!pending || !code || params.get("state") !== pending.state) {
    throw new Error("This sign-in link is not this tab's: sign in again from the dashboard.");
  }
  const response = await fetch(new URL("/oauth2/token", auth.domain).toString(), {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: auth.clientId,
      code,
      redirect_uri: redirectUri(),
      code_verifier: pending.verifier,
    }).toString(),
  });
  if (!response.ok) throw new Error(`Sign-in failed: the token endpoint answered ${response.status}`);
  const tokens = (await response.json()) as Tokens;
  if (!tokens.id_token) throw new Error("Sign-in failed: no ID token came back");
  keep(tokens, tokens.refresh_token ?? null);
  const back = pending.back.startsWith("/ui/") && !pending.back.startsWith(auth.callbackPath);
  window.history.replaceState(null, "", back ? pending.back : "/ui/");
}

/**
 * Before the first page: nothing locally; on AWS, finish a sign-in that is coming back, or
 * start one. Resolves when the app may draw its pages.
 */
export async function ensureSignedIn(): Promise<void> {
  const auth = config().auth;
  if (!auth) return;
  if (window.location.pathname === auth.callbackPath) {
    await completeSignIn();
    return;
  }
  if (!session()) await signIn();
}

/** The data API refused the token: sign in again, unless that just happened (then say so). */
export function refused(): boolean {
  const current = session();
  if (!config().auth || (current && Date.now() - current.signedInAt < RECENT_MS)) return false;
  sessionStorage.removeItem(SESSION);
  void signIn();
  return true;
}
