// The daemon's own JSON API, called with the dashboard's session: the cookie
// goes along by itself; the CSRF token must be sent in a header, which a page
// on another site cannot do.
const session = { csrf: "", team: "", admin: false };

export function currentSession() {
  return session;
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function failure(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && body.message) message = body.message;
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, message);
}

// fetch() against the daemon. `sandbox` names a sandbox: the request then goes
// to its envd (port 49983) by E2B's routing headers.
export async function request(method, path, { json, body, sandbox, headers = {}, signal } = {}) {
  // No token yet (the page's first request): no header, so that request is
  // the very one index.html preloaded (a preload is used by an equal request).
  const sent = session.csrf ? { "X-ABX-CSRF": session.csrf, ...headers } : { ...headers };
  if (sandbox) {
    sent["E2b-Sandbox-Id"] = sandbox;
    sent["E2b-Sandbox-Port"] = "49983";
  }
  if (json !== undefined) {
    sent["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  }
  const response = await fetch(path, { method, headers: sent, body, signal, credentials: "same-origin" });
  if (!response.ok) {
    const error = await failure(response);
    // An ended session (expired, logged out in another tab, key revoked):
    // the app shows the login page again, with this error as its line.
    if (error.status === 401 && session.csrf && !path.startsWith("/dashboard/")) {
      window.dispatchEvent(new CustomEvent("abx:session-ended"));
    }
    throw error;
  }
  return response;
}

export async function call(method, path, options) {
  const response = await request(method, path, options);
  const text = await response.text();
  return text ? JSON.parse(text) : {};
}

// A unary Connect RPC of a sandbox's envd (Connect's JSON encoding).
export function rpc(sandbox, method, message = {}) {
  return call("POST", `/${method}`, { sandbox, json: message });
}

export async function login(apiKey) {
  const answer = await call("POST", "/dashboard/login", { json: { apiKey } });
  Object.assign(session, answer);
  return answer;
}

// A loaded page's first answer, asked for while its scripts load (index.html
// preloads it): the session (it fails without one), and the sandboxes the
// event feed starts from with their digest ({sandboxes, digest}).
export async function bootstrap() {
  const answer = await call("GET", "/dashboard/bootstrap");
  Object.assign(session, answer.session);
  return answer;
}

export async function logout() {
  await request("POST", "/dashboard/logout");
  Object.assign(session, { csrf: "", team: "", admin: false });
}
