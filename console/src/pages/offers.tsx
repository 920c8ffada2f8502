import { useEffect, useState } from "preact/hooks";
import { api, ApiError, withQuery } from "../api";
import { ErrorMessage, formatTime, Link, Loading } from "../components";
import { navigate, useRoute } from "../router";
import { OFFER_STATUSES } from "../words";
import type { PageProps } from "../app";

const PAGE_SIZE = 25;

/** Offers: a cursor-paged list, a create/edit form with the service's messages at each field, status actions. */
export function Offers(props: PageProps) {
  const route = useRoute();
  if (route.path === "/offers/new" && props.canWrite) return <OfferForm />;
  if (route.path.startsWith("/offers/") && route.path !== "/offers/new") {
    return <OfferForm id={decodeURIComponent(route.path.slice("/offers/".length))} canWrite={props.canWrite} />;
  }
  return <OfferList canWrite={props.canWrite} />;
}

/**
 * Search (`q`, the name) and the status filter are the list route's own parameters, kept in the
 * address with the cursor, so they cover the whole catalog page after page (docs/console.md).
 */
function OfferList({ canWrite }: { canWrite: boolean }) {
  const route = useRoute();
  const cursor = route.query.get("cursor") ?? "";
  const q = route.query.get("q") ?? "";
  const status = route.query.get("status") ?? "";
  const [search, setSearch] = useState(q);
  const [page, setPage] = useState<any>(null);
  const [error, setError] = useState<unknown>(null);
  const [history, setHistory] = useState<string[]>([]);
  const [reload, setReload] = useState(0);

  useEffect(() => setSearch(q), [q]);
  useEffect(() => {
    setError(null);
    setPage(null);
    // A slower answer for an older filter must not replace the newer one.
    let current = true;
    api("GET", withQuery("/api/v1/offers", { limit: PAGE_SIZE, cursor, q, status }))
      .then((p) => current && setPage(p))
      .catch((err) => current && setError(err));
    return () => {
      current = false;
    };
  }, [cursor, q, status, reload]);

  /** A new filter starts again at the first page. */
  const filter = (next: { q?: string; status?: string }) => {
    setHistory([]);
    navigate(withQuery("/offers", { q, status, ...next }));
  };

  const setStatusOf = async (offer: any, next: string) => {
    setError(null);
    try {
      await api("PUT", "/api/v1/offers", { id: offer.id, status: next });
      setReload((n) => n + 1);
    } catch (err) {
      setError(err);
    }
  };

  const rows: any[] = page?.data ?? [];
  return (
    <section aria-labelledby="offers-title">
      <h1 id="offers-title">Offers</h1>
      <form
        class="toolbar"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          filter({ q: search.trim() });
        }}
      >
        <label for="offer-search">Name contains</label>
        <input id="offer-search" type="search" maxLength={255} value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        <button type="submit">Search</button>
        <label for="offer-status">Status</label>
        <select id="offer-status" value={status} onChange={(e) => filter({ status: e.currentTarget.value })}>
          <option value="">any</option>
          {OFFER_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        {canWrite && (
          <Link to="/offers/new" class="button primary">
            New offer
          </Link>
        )}
      </form>
      <ErrorMessage error={error} />
      {!page && !error && <Loading />}
      {page && (
        <>
          <table>
            <caption class="visually-hidden">Offers on this page</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Category</th>
                <th scope="col">Priority</th>
                <th scope="col">Version</th>
                <th scope="col">Updated</th>
                {canWrite && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {rows.map((o) => (
                <tr key={o.id} data-offer={o.name}>
                  <th scope="row">
                    <Link to={`/offers/${encodeURIComponent(o.id)}`}>{o.name}</Link>
                  </th>
                  <td>
                    <span class={`status status-${o.status}`}>{o.status}</span>
                  </td>
                  <td>{o.categoryRef?.name ?? o.category ?? "—"}</td>
                  <td>{o.priority}</td>
                  <td>{o.version}</td>
                  <td>{formatTime(o.updatedAt)}</td>
                  {canWrite && (
                    <td class="actions">
                      {o.status !== "active" && o.status !== "archived" && (
                        <button type="button" onClick={() => setStatusOf(o, "active")} aria-label={`Activate ${o.name}`}>
                          Activate
                        </button>
                      )}
                      {o.status === "active" && (
                        <button type="button" onClick={() => setStatusOf(o, "paused")} aria-label={`Pause ${o.name}`}>
                          Pause
                        </button>
                      )}
                      {o.status !== "archived" && (
                        <button type="button" onClick={() => setStatusOf(o, "archived")} aria-label={`Archive ${o.name}`}>
                          Archive
                        </button>
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
          {rows.length === 0 && <p class="muted">{q || status ? "No offers match." : "No offers yet."}</p>}
          <div class="pager">
            <button
              type="button"
              disabled={history.length === 0}
              onClick={() => {
                const prev = history[history.length - 1];
                setHistory(history.slice(0, -1));
                navigate(withQuery("/offers", { q, status, cursor: prev }));
              }}
            >
              Previous page
            </button>
            <button
              type="button"
              disabled={!page.pagination?.hasMore}
              onClick={() => {
                setHistory([...history, cursor]);
                navigate(withQuery("/offers", { q, status, cursor: page.pagination.cursor }));
              }}
            >
              Next page
            </button>
          </div>
        </>
      )}
    </section>
  );
}

const FIELDS = [
  { name: "name", label: "Name", type: "text" },
  { name: "status", label: "Status", type: "status" },
  { name: "category", label: "Category", type: "text" },
  { name: "group", label: "Group", type: "text" },
  { name: "priority", label: "Priority (0-100)", type: "number" },
  { name: "businessValue", label: "Business value", type: "number" },
  { name: "shortDesc", label: "Short description", type: "text" },
  { name: "description", label: "Description", type: "textarea" },
  { name: "tags", label: "Tags (comma-separated)", type: "tags" },
] as const;

/** The API may name a field in snake_case or camelCase; match either. */
const sameField = (a: string, b: string) => a.replace(/_([a-z])/g, (_, c) => c.toUpperCase()) === b || a === b;

function OfferForm({ id, canWrite = true }: { id?: string; canWrite?: boolean }) {
  const [values, setValues] = useState<Record<string, any> | null>(id ? null : { status: "draft", priority: 0, businessValue: 0, tags: [] });
  const [offer, setOffer] = useState<any>(null);
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!id) return;
    api("GET", `/api/v1/offers/${encodeURIComponent(id)}`)
      .then((o) => {
        setOffer(o);
        setValues({ ...o });
      })
      .catch(setError);
  }, [id]);

  if (!values) return error ? <ErrorMessage error={error} /> : <Loading />;
  const fieldError = (name: string) =>
    error instanceof ApiError ? error.fieldErrors.find((e) => sameField(e.field, name))?.message : undefined;

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setSaved(false);
    const body: Record<string, unknown> = {};
    for (const f of FIELDS) {
      const v = values[f.name];
      if (f.type === "number") body[f.name] = v === "" || v === undefined ? undefined : Number(v);
      else if (f.type === "tags") body[f.name] = Array.isArray(v) ? v : String(v ?? "").split(",").map((t) => t.trim()).filter(Boolean);
      else body[f.name] = v ?? "";
    }
    try {
      if (id) {
        const updated = await api("PUT", "/api/v1/offers", { ...body, id: offer.id });
        setOffer(updated);
        setValues({ ...updated });
        setSaved(true);
      } else {
        const created = await api("POST", "/api/v1/offers", body);
        navigate(`/offers/${encodeURIComponent(created.id)}`, true);
      }
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const unplaced = error instanceof ApiError ? error.fieldErrors.filter((e) => !FIELDS.some((f) => sameField(e.field, f.name))) : [];
  return (
    <section aria-labelledby="offer-title">
      <p>
        <Link to="/offers">← All offers</Link>
      </p>
      <h1 id="offer-title">{id ? `Offer ${offer?.name ?? ""}` : "New offer"}</h1>
      {offer && (
        <p class="muted">
          Version {offer.version}, updated {formatTime(offer.updatedAt)}
        </p>
      )}
      {error && (!(error instanceof ApiError) || error.fieldErrors.length === 0 || unplaced.length > 0) ? <ErrorMessage error={error} /> : null}
      {error instanceof ApiError && error.fieldErrors.length > 0 && unplaced.length === 0 && (
        <p class="error" role="alert">
          The offer was not saved: see the fields marked below.
        </p>
      )}
      {saved && (
        <p class="ok" role="status">
          Saved.
        </p>
      )}
      <form class="card form" onSubmit={submit} noValidate>
        <fieldset disabled={!canWrite || busy}>
          {FIELDS.map((f) => {
            const message = fieldError(f.name);
            const inputId = `offer-${f.name}`;
            const common = {
              id: inputId,
              name: f.name,
              "aria-invalid": message ? ("true" as const) : undefined,
              "aria-describedby": message ? `${inputId}-error` : undefined,
            };
            const value = f.type === "tags" && Array.isArray(values[f.name]) ? values[f.name].join(", ") : values[f.name] ?? "";
            const set = (v: string) => setValues({ ...values, [f.name]: v });
            return (
              <div class={`field${message ? " invalid" : ""}`} key={f.name} data-field={f.name}>
                <label for={inputId}>{f.label}</label>
                {f.type === "status" ? (
                  <select {...common} value={value} onChange={(e) => set(e.currentTarget.value)}>
                    {OFFER_STATUSES.map((s) => (
                      <option key={s} value={s}>
                        {s}
                      </option>
                    ))}
                  </select>
                ) : f.type === "textarea" ? (
                  <textarea {...common} value={value} onInput={(e) => set(e.currentTarget.value)} rows={3} />
                ) : (
                  f.type === "number" ? (
                  <input {...common} type="number" value={value} onInput={(e) => set(e.currentTarget.value)} />
                ) : (
                  <input {...common} type="text" value={value} onInput={(e) => set(e.currentTarget.value)} />
                )
                )}
                {message && (
                  <p class="field-error" id={`${inputId}-error`}>
                    {message}
                  </p>
                )}
              </div>
            );
          })}
          {canWrite && (
            <button type="submit" class="primary">
              {id ? "Save changes" : "Create offer"}
            </button>
          )}
        </fieldset>
      </form>
    </section>
  );
}
