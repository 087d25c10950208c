// Where the app runs, read once before the first page: `/ui/config.json` when the deployment
// wrote one (on AWS: the Cognito sign-in, and polling instead of the live stream), else the
// local defaults of `switchyard dev` (no sign-in, server-sent events).

export type CognitoSignIn = {
  kind: "cognito";
  /** The hosted sign-in's origin, https://<prefix>.auth.<region>.amazoncognito.com */
  domain: string;
  clientId: string;
  scopes: string;
  callbackPath: string;
  signOutPath: string;
};

export type AppConfig = {
  auth: CognitoSignIn | null;
  live: { mode: "stream" | "poll"; everySeconds: number };
  builder: boolean;
};

export const LOCAL: AppConfig = {
  auth: null,
  live: { mode: "stream", everySeconds: 1 },
  builder: true,
};

let current: AppConfig = LOCAL;

export function config(): AppConfig {
  return current;
}

function isSignIn(value: unknown): value is CognitoSignIn {
  const v = value as Partial<CognitoSignIn> | null;
  return (
    !!v &&
    v.kind === "cognito" &&
    typeof v.domain === "string" &&
    // https, or a sign-in served on this machine (the tests' stand-in for Cognito)
    /^(https:\/\/|http:\/\/(127\.0\.0\.1|localhost)[:/])/.test(v.domain) &&
    typeof v.clientId === "string" &&
    typeof v.callbackPath === "string"
  );
}

/** Read `/ui/config.json`; locally there is none (the server answers the app's page). */
export async function loadConfig(): Promise<AppConfig> {
  try {
    const response = await fetch("/ui/config.json", { cache: "no-store" });
    const type = response.headers.get("Content-Type") ?? "";
    if (response.ok && type.includes("json")) {
      const data = (await response.json()) as Partial<AppConfig> & { auth?: unknown };
      const auth = isSignIn(data.auth) ? data.auth : null;
      const mode = data.live?.mode === "poll" ? "poll" : "stream";
      const every = Number(data.live?.everySeconds);
      current = {
        auth,
        live: { mode, everySeconds: every > 0 ? every : 1 },
        builder: data.builder ?? auth === null,
      };
    }
  } catch {
    // unreachable or not JSON: the local defaults
  }
  return current;
}
