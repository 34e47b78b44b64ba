/**
 * The console page: sign in with a bearer token, pick an application,
 * environment, agent type and method from the catalogue, fill the parameters
 * through forms made from their schemas, start, and watch the invocation
 * (run.ts). The page talks only to its own origin: the catalogue with
 * `fetch`, sessions over the client's browser transport.
 */
import { createClient, type Client, type ParamNode, type SchemaValueJson } from "@golem-stream/client";
import { acceptedToken, checkOriginAllowed, ConsoleError, loadCatalogue, type AgentTypeEntry } from "./catalogue.js";
import { FormError, recordFields } from "./form.js";
import { Run, type RunElements } from "./run.js";
import { holdRun, releaseRun } from "./run-lock.js";
import { currentRunId, deleteRun, setCurrentRunId } from "./run-store.js";
import { sweepOrphans } from "./run-sweep.js";
import { forgetToken, readToken, saveToken } from "./session-token.js";

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`the page has no #${id}`);
  return found as T;
};

/** Long outages are survived in the page (about 5 minutes of retries); after that, Resume or a reload continues. */
const RECONNECT = { maxAttempts: 60, initialDelayMs: 200, maxDelayMs: 5000 };

const ui: RunElements = {
  title: $("run-title"),
  status: $("status"),
  streams: $("streams"),
  result: $("result"),
  outcome: $("outcome"),
  cancel: $<HTMLButtonElement>("cancel"),
  resume: $<HTMLButtonElement>("resume"),
};

let client: Client | undefined;
let catalogue: AgentTypeEntry[] = [];
let readConstructor: (() => Promise<ParamNode>) | undefined;
let readMethod: (() => Promise<ParamNode>) | undefined;
let run: Run | undefined;

function show(id: string, text: string | undefined): void {
  const node = $(id);
  node.textContent = text ?? "";
  node.hidden = text === undefined;
}

function clientFor(): Client {
  return (client ??= createClient({
    url: location.origin,
    getToken: () => {
      const token = readToken();
      if (token === undefined) throw new Error("signed out");
      return token;
    },
    reconnect: RECONNECT,
  }));
}

/**
 * Opens the catalogue with `token`. `checked`: the token is the one this tab signed in with
 * (a reload, another application): a catalogue that fails for any reason but `unauthenticated`
 * keeps the tab signed in. A new token is saved and the workspace shown only once an answer
 * showed the server accepted it (the catalogue, or a refusal only an authenticated request gets);
 * a busy server, a throttled address, a proxy's error or no answer leave the tab signed out.
 */
async function signIn(token: string, checked: boolean): Promise<void> {
  show("sign-in-error", undefined);
  try {
    await checkOriginAllowed();
  } catch (error) {
    signedOut();
    show("sign-in-error", error instanceof Error ? error.message : String(error));
    return;
  }
  try {
    catalogue = await loadCatalogue(token, $<HTMLInputElement>("application").value, $<HTMLInputElement>("environment").value);
  } catch (error) {
    if (error instanceof ConsoleError && error.code === "unauthenticated") {
      forgetToken();
      signedOut();
      show("sign-in-error", error.message);
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    if (!checked && !acceptedToken(error)) {
      // The token was not checked: nothing is kept, and the sign-in form says why.
      signedOut();
      show("sign-in-error", message);
      return;
    }
    // The token works; the catalogue of this application does not.
    saveToken(token);
    signedIn();
    show("catalogue-error", message);
    return;
  }
  saveToken(token);
  signedIn();
  fillAgentTypes();
}

function signedIn(): void {
  $("sign-in").hidden = true;
  $("workspace").hidden = false;
  $("sign-out").hidden = false;
  $("who").hidden = false;
  $("who").textContent = "signed in";
}

function signedOut(): void {
  $("sign-in").hidden = false;
  $("workspace").hidden = true;
  $("sign-out").hidden = true;
  $("who").hidden = true;
}

function fillAgentTypes(): void {
  show("catalogue-error", undefined);
  const select = $<HTMLSelectElement>("agent-type");
  select.replaceChildren(...catalogue.map((type) => new Option(type.name, type.name)));
  $("choosers").hidden = catalogue.length === 0;
  if (catalogue.length === 0) show("catalogue-error", "This environment has no agent types.");
  fillMethods();
}

function fillMethods(): void {
  const type = catalogue.find((entry) => entry.name === $<HTMLSelectElement>("agent-type").value);
  const select = $<HTMLSelectElement>("method");
  select.replaceChildren(...(type?.methods ?? []).map((method) => new Option(method.name, method.name)));
  fillForms();
}

function fillForms(): void {
  const type = catalogue.find((entry) => entry.name === $<HTMLSelectElement>("agent-type").value);
  const method = type?.methods.find((entry) => entry.name === $<HTMLSelectElement>("method").value);
  const constructorSet = $("constructor-parameters");
  const methodSet = $("method-parameters");
  constructorSet.replaceChildren(constructorSet.querySelector("legend")!);
  methodSet.replaceChildren(methodSet.querySelector("legend")!);
  $("invoke-form").hidden = method === undefined;
  if (type === undefined || method === undefined) return;
  readConstructor = recordFields(type.constructorParameters, constructorSet);
  readMethod = recordFields(method.parameters, methodSet);
}

async function start(): Promise<void> {
  show("invoke-error", undefined);
  // What Start was pressed for, taken now: the selects stay live while a chosen file is read, and
  // the parameters read belong to these forms, not to whatever is selected once the read is done.
  const application = $<HTMLInputElement>("application").value;
  const environment = $<HTMLInputElement>("environment").value;
  const agentType = $<HTMLSelectElement>("agent-type").value;
  const method = $<HTMLSelectElement>("method").value;
  const [constructorReader, methodReader] = [readConstructor!, readMethod!];
  let constructorParameters: ParamNode;
  let methodParameters: ParamNode;
  // Reading a chosen file takes a moment: Start waits for it, and cannot be pressed twice meanwhile.
  const button = $<HTMLButtonElement>("start");
  button.disabled = true;
  try {
    constructorParameters = await constructorReader();
    methodParameters = await methodReader();
  } catch (error) {
    show("invoke-error", error instanceof FormError ? error.message : String(error));
    return;
  } finally {
    button.disabled = false;
  }
  // Signed out while the file was read: nothing is started.
  if (readToken() === undefined) return;
  await run?.discard();
  $("run").hidden = false;
  run = await Run.start(
    clientFor(),
    { application, environment, agentType, method, constructorParameters: constructorParameters as SchemaValueJson, methodParameters },
    `${agentType}.${method} (${application}/${environment})`,
    ui,
  );
}

/**
 * `?application=…&environment=…` in the page's address pre-fills the
 * catalogue to open: `serve --agents` prints its console link with the
 * first application it serves, where the form's default is the demo's.
 */
function prefillFromAddress(): void {
  const query = new URLSearchParams(location.search);
  for (const name of ["application", "environment"] as const) {
    const value = query.get(name);
    if (value !== null && value.length > 0 && value.length <= 128) $<HTMLInputElement>(name).value = value;
  }
}

/**
 * Forgets the token and this tab's run, records included (also a run not
 * shown, as when the sign-in at a reload failed); the sign-in form comes
 * back once they are gone.
 */
async function signOut(): Promise<void> {
  forgetToken();
  const discarded = run;
  run = undefined;
  $("run").hidden = true;
  try {
    await discarded?.discard();
    await forgetStoredRun();
  } finally {
    signedOut();
  }
}

/** Removes this tab's stored run, if it names one: a signed-out tab resumes nothing. */
async function forgetStoredRun(): Promise<void> {
  const id = currentRunId();
  if (id === undefined) return;
  setCurrentRunId(undefined);
  try {
    await deleteRun(id);
  } finally {
    releaseRun(id);
  }
}

async function boot(): Promise<void> {
  // First, before anything waits: a reload lets go of its run's lock, and other tabs' sweeps spare a run whose lock is held.
  const resumable = currentRunId();
  if (resumable !== undefined) holdRun(resumable);
  prefillFromAddress();
  $<HTMLFormElement>("sign-in-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $<HTMLInputElement>("token");
    const token = input.value.trim();
    input.value = "";
    void signIn(token, false);
  });
  $("sign-out").addEventListener("click", () => void signOut());
  $<HTMLFormElement>("catalogue-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = readToken();
    if (token !== undefined) void signIn(token, true);
  });
  $("agent-type").addEventListener("change", fillMethods);
  $("method").addEventListener("change", fillForms);
  $<HTMLFormElement>("invoke-form").addEventListener("submit", (event) => {
    event.preventDefault();
    void start().catch((error: unknown) => show("invoke-error", error instanceof Error ? error.message : String(error)));
  });

  try {
    await sweepOrphans(resumable);
  } catch (error) {
    console.warn("cannot sweep the stored runs", error);
  }
  const token = readToken();
  if (token === undefined) {
    await forgetStoredRun();
    signedOut();
    document.body.dataset["ready"] = "true";
    return;
  }
  await signIn(token, true);
  // The token was refused: signed out, and the run goes with it.
  if (readToken() === undefined) await forgetStoredRun();
  const id = currentRunId();
  if (id !== undefined) {
    $("run").hidden = false;
    run = await Run.restore(clientFor(), id, ui);
    if (run === undefined) {
      $("run").hidden = true;
      setCurrentRunId(undefined);
      releaseRun(id);
    }
  }
  document.body.dataset["ready"] = "true";
}

void boot();
