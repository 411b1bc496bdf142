#!/usr/bin/env node
// Runs the language-neutral parameter fixtures through Ajv 8 (see oracle.js)
// and reports every place where Ajv and a fixture disagree, unless the fixture
// explains the deliberate difference with an "ajv_note".
//
//   node scripts/ajv/check-fixtures.js [repo root]
//
// testdata/params/*.json: for each group,
//   - "refused": Ajv must refuse to compile too, or the group has "ajv_note";
//   - otherwise Ajv must compile it, and for each case Ajv's validity must
//     equal "valid"; when valid, Ajv's data after defaults must deep-equal
//     "checked"; when invalid, Ajv's errors, turned into our issue convention,
//     must equal "issues" (path = Ajv's instancePath, plus the member's
//     name for required, dependentRequired, additionalProperties,
//     unevaluatedProperties and propertyNames). A case with "ajv_note" is
//     compared on paths only: when both refuse, each issue's path must be
//     one of Ajv's.
//   - A case whose params_text / params_base64 is not JSON that JavaScript can
//     read (invalid UTF-8, broken syntax) is skipped: only the Go side sees it.
// testdata/refs/*.json: the schemas must compile; each case runs through Ajv
// and then through a small model of the ref rule over the fixture instances.
//
// Also checks the shape of every fixture (required members, sorted and unique
// issues, refused pointers that exist in the schema).
// Prints one line per failure, a line with the noted and skipped counts, and
// a closing line "ajv-fixtures: N passed, M failed"; exits 1 when M > 0.

"use strict";

const fs = require("fs");
const path = require("path");
const { run, newAjv } = require("./oracle.js");

const root = path.resolve(process.argv[2] || path.join(__dirname, "..", ".."));
let passed = 0;
let failed = 0;
let noted = 0;
let skipped = 0;

function fail(where, msg) {
  failed++;
  console.log(`FAIL ${where}: ${msg}`);
}

// ---- small helpers -------------------------------------------------------

function deepEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]));
}

function escapeToken(s) {
  return String(s).replace(/~/g, "~0").replace(/\//g, "~1");
}

function resolvePointer(doc, pointer) {
  if (pointer === "") return { found: true, value: doc };
  if (!pointer.startsWith("/")) return { found: false };
  let cur = doc;
  for (const raw of pointer.slice(1).split("/")) {
    const tok = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (cur === null || typeof cur !== "object" || !Object.prototype.hasOwnProperty.call(cur, tok)) {
      return { found: false };
    }
    cur = cur[tok];
  }
  return { found: true, value: cur };
}

function compareIssues(a, b) {
  if (a.path !== b.path) return a.path < b.path ? -1 : 1;
  if (a.keyword !== b.keyword) return a.keyword < b.keyword ? -1 : 1;
  return 0;
}

function sortUnique(issues) {
  const out = [];
  for (const i of [...issues].sort(compareIssues)) {
    if (!out.length || compareIssues(out[out.length - 1], i) !== 0) out.push(i);
  }
  return out;
}

// bare drops what Ajv cannot be compared on: our messages.
function bare(issues) {
  return issues.map((i) => ({ path: i.path, keyword: i.keyword }));
}

function show(issues) {
  return issues.map((i) => `${i.path || "''"}:${i.keyword}`).join(", ") || "(none)";
}

// The parameters a case gives to the check, as JavaScript sees them.
// Returns {ok: false} when JavaScript cannot read them.
function caseParams(c) {
  if (c.params_text !== undefined) {
    try {
      return { ok: true, value: JSON.parse(c.params_text) };
    } catch (e) {
      return { ok: false, why: "params_text is not JSON for JavaScript" };
    }
  }
  if (c.params_base64 !== undefined) {
    let text;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(c.params_base64, "base64"));
    } catch (e) {
      return { ok: false, why: "params_base64 is not UTF-8" };
    }
    try {
      return { ok: true, value: JSON.parse(text) };
    } catch (e) {
      return { ok: false, why: "params_base64 is not JSON for JavaScript" };
    }
  }
  return { ok: true, value: c.params === undefined ? {} : c.params };
}

// ---- Ajv errors -> our issues -------------------------------------------

// Keywords whose subschema failures are not listed: only the keyword itself.
const OPAQUE = new Set(["anyOf", "oneOf", "not", "contains", "propertyNames", "if"]);

function countMatches(schema, parentSchema, data) {
  const ajv = newAjv();
  const sub = parentSchema.contains;
  const v = ajv.compile(typeof sub === "object" ? { ...sub, $defs: schema.$defs } : sub);
  return data.filter((item) => v(structuredClone(item))).length;
}

function toIssues(errors, schema) {
  const blockers = errors.filter((e) => OPAQUE.has(e.keyword)).map((e) => e.schemaPath + "/");
  const issues = [];
  for (const e of errors) {
    if (blockers.some((b) => e.schemaPath.startsWith(b))) continue;
    const at = e.instancePath;
    switch (e.keyword) {
      case "if":
        break; // then/else breaches are listed on their own
      case "required":
      case "dependentRequired":
        issues.push({ path: at + "/" + escapeToken(e.params.missingProperty), keyword: e.keyword });
        break;
      case "additionalProperties":
        issues.push({ path: at + "/" + escapeToken(e.params.additionalProperty), keyword: e.keyword });
        break;
      case "unevaluatedProperties":
        issues.push({ path: at + "/" + escapeToken(e.params.unevaluatedProperty), keyword: e.keyword });
        break;
      case "propertyNames":
        issues.push({ path: at + "/" + escapeToken(e.params.propertyName), keyword: e.keyword });
        break;
      case "false schema":
        issues.push({ path: at, keyword: "false" });
        break;
      case "items": // "items": false after prefixItems: each extra item breaks a false schema
        for (let i = e.params.limit; i < e.data.length; i++) issues.push({ path: at + "/" + i, keyword: "items" });
        break;
      case "contains": {
        const ps = e.parentSchema;
        const n = countMatches(schema, ps, e.data);
        const min = ps.minContains === undefined ? 1 : ps.minContains;
        let kw = "maxContains";
        if (n < min) kw = ps.minContains === undefined ? "contains" : "minContains";
        issues.push({ path: at, keyword: kw });
        break;
      }
      default:
        issues.push({ path: at, keyword: e.keyword });
    }
  }
  return sortUnique(issues.map((i) => ({ ...i, path: clipPath(i.path) })));
}

// clipPath is the bound the registry puts on an issue's path (issues.go,
// clipPath): a segment keeps at most 64 bytes of UTF-8, cut at a
// character and never inside a ~0 or ~1 escape, marked with "…"; the
// path at most 256 bytes, cut after its last whole segment, marked "/…".
function clipPath(p) {
  const bytes = (s) => Buffer.byteLength(s, "utf8");
  if (bytes(p) <= 64 || !p.startsWith("/")) return p;
  let out = "";
  for (let seg of p.slice(1).split("/")) {
    if (bytes(seg) > 64) {
      const buf = Buffer.from(seg, "utf8");
      let cut = 64;
      while (cut > 0 && (buf[cut] & 0xc0) === 0x80) cut--;
      if (cut > 0 && buf[cut - 1] === 0x7e) cut--;
      seg = buf.subarray(0, cut).toString("utf8") + "…";
    }
    if (bytes(out) + 1 + bytes(seg) > 256) {
      out += "/…";
      break;
    }
    out += "/" + seg;
  }
  return out;
}

// ---- fixture shape -------------------------------------------------------

function lintCase(where, c, refs) {
  const given = ["params", "params_text", "params_base64"].filter((k) => c[k] !== undefined);
  if (typeof c.description !== "string" || !c.description) fail(where, "case without description");
  if (given.length > 1) fail(where, "more than one of params, params_text, params_base64");
  if (typeof c.valid !== "boolean") fail(where, "valid is not a boolean");
  if (c.valid) {
    if (!("checked" in c)) fail(where, "valid case without checked");
    if (c.issues !== undefined) fail(where, "valid case with issues");
  } else {
    if ("checked" in c) fail(where, "invalid case with checked");
    if (c.code !== undefined) {
      // A refusal other than invalid_parameters (internal, for a schema
      // whose defaults contradict it) lists no issues.
      if (typeof c.code !== "string" || !c.code) fail(where, "empty code");
      if (c.issues !== undefined) fail(where, "a case with code has no issues");
      if (c.ajv_note === undefined) fail(where, "a case with code needs an ajv_note");
      return;
    }
    if (!Array.isArray(c.issues) || c.issues.length === 0) {
      fail(where, "invalid case without issues");
      return;
    }
    for (const i of c.issues) {
      if (typeof i.path !== "string" || typeof i.keyword !== "string" || !i.keyword) fail(where, "malformed issue");
      if (i.message !== undefined && (typeof i.message !== "string" || !i.message)) fail(where, "empty issue message");
      for (const k of Object.keys(i)) if (!["path", "keyword", "message"].includes(k)) fail(where, `unknown issue member ${k}`);
      if (i.path !== "" && !i.path.startsWith("/")) fail(where, `issue path ${i.path} is not a JSON Pointer`);
    }
    const su = sortUnique(c.issues);
    if (su.length !== c.issues.length || su.some((x, k) => compareIssues(x, c.issues[k]) !== 0)) {
      fail(where, "issues are not sorted by path then keyword, or not unique");
    }
  }
  const known = new Set(["description", "params", "params_text", "params_base64", "valid", "checked", "issues", "ajv_note", "code"]);
  for (const k of Object.keys(c)) if (!known.has(k)) fail(where, `unknown case member ${k}`);
  if (c.ajv_note !== undefined && (typeof c.ajv_note !== "string" || !c.ajv_note)) fail(where, "empty ajv_note");
}

function lintGroup(where, g) {
  const known = new Set(["description", "schema", "schema_text", "refused", "cases", "ajv_note"]);
  for (const k of Object.keys(g)) if (!known.has(k)) fail(where, `unknown group member ${k}`);
  if (typeof g.description !== "string" || !g.description) fail(where, "group without description");
  if (!Array.isArray(g.cases)) fail(where, "group without cases array");
  if (g.refused !== undefined) {
    if (typeof g.refused.pointer !== "string") fail(where, "refused without pointer");
    else if (g.schema !== undefined && !resolvePointer(g.schema, g.refused.pointer).found &&
      !resolvePointer(g.schema, g.refused.pointer.replace(/\/[^/]*$/, "")).found) {
      // A pointer may name a keyword the schema lacks (a root without
      // "type" is refused at /type), but its parent must exist.
      fail(where, `refused pointer ${g.refused.pointer} is not in the schema`);
    }
    if (g.refused.keyword !== undefined && (typeof g.refused.keyword !== "string" || !g.refused.keyword)) {
      fail(where, "refused keyword must be a non-empty string");
    }
    if (g.cases && g.cases.length) fail(where, "refused group with cases");
  }
}

function loadFixtures(dir) {
  const full = path.join(root, "testdata", dir);
  if (!fs.existsSync(full)) return [];
  return fs
    .readdirSync(full)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => {
      const file = path.join("testdata", dir, f);
      try {
        return { file, doc: JSON.parse(fs.readFileSync(path.join(root, file), "utf8")) };
      } catch (e) {
        fail(file, "not JSON: " + e.message);
        return null;
      }
    })
    .filter(Boolean);
}

// ---- testdata/params -----------------------------------------------------

function checkParamsFile(file, doc) {
  if (typeof doc.description !== "string" || !Array.isArray(doc.groups)) {
    fail(file, "needs description and groups");
    return;
  }
  doc.groups.forEach((g, gi) => {
    const gwhere = `${file} group ${gi} (${g.description})`;
    lintGroup(gwhere, g);
    if (g.schema_text !== undefined) {
      // Text that is not JSON: only the Go side reads it.
      if (g.refused === undefined || g.schema !== undefined) fail(gwhere, "schema_text is for refused text alone");
      skipped++;
      return;
    }
    const probe = run(g.schema, {}, { verbose: true });
    if (g.refused !== undefined) {
      if (!probe.compiled) passed++;
      else if (g.ajv_note) noted++;
      else fail(gwhere, "refused here, but Ajv compiles it (add ajv_note if deliberate)");
      return;
    }
    if (!probe.compiled) {
      if (g.ajv_note) noted += g.cases.length;
      else fail(gwhere, "Ajv refuses to compile: " + probe.compileError);
      if (!g.ajv_note) return;
    }
    (g.cases || []).forEach((c, ci) => {
      const where = `${gwhere} case ${ci} (${c.description})`;
      lintCase(where, c, false);
      if (!probe.compiled) return;
      const p = caseParams(c);
      if (!p.ok) {
        skipped++;
        return;
      }
      const r = run(g.schema, p.value, { verbose: true });
      if (c.ajv_note) {
        noted++;
        // A noted difference is about validity or keywords, never about
        // where a value is: when both refuse, each of our paths must be
        // one of Ajv's.
        if (!r.runError && !r.valid && !c.valid && c.issues) {
          const paths = new Set(toIssues(r.errors, g.schema).map((i) => i.path));
          const stray = c.issues.filter((i) => !paths.has(i.path));
          if (stray.length) fail(where, `paths [${show(stray)}] are none of Ajv's instancePaths`);
        }
        return;
      }
      if (r.runError) return fail(where, "Ajv threw while validating: " + r.runError);
      if (r.valid !== c.valid) {
        return fail(where, `Ajv says valid=${r.valid} (${show(toIssues(r.errors, g.schema))}), fixture says ${c.valid}`);
      }
      if (c.valid) {
        if (!deepEqual(r.data, c.checked)) {
          return fail(where, `Ajv data ${JSON.stringify(r.data)} != checked ${JSON.stringify(c.checked)}`);
        }
      } else {
        const got = toIssues(r.errors, g.schema);
        if (!deepEqual(got, bare(c.issues))) return fail(where, `Ajv issues [${show(got)}] != fixture [${show(c.issues)}]`);
      }
      passed++;
    });
  });
}

// ---- testdata/refs -------------------------------------------------------

// A model of the ref rule over the fixture instances.
function resolveWith(instances) {
  return (schemaName, value) => {
    const list = instances[schemaName] || [];
    const byId = list.find((i) => i.id === value);
    const names = list.filter((i) => Object.values(i.display_name || {}).includes(value)).map((i) => i.key);
    if (byId) return { key: byId.key };
    if (names.length === 1) return { key: names[0] };
    return { issue: names.length ? "several" : "none" };
  };
}

// Walks schema and data together, replacing each string under a "ref" with
// the key it resolves to, and collecting ref issues. Only subschemas that
// apply are visited: the anyOf/oneOf branches that hold, then or else.
function resolveRefs(rootSchema, data, resolve) {
  const issues = [];
  const holds = (sub, value) => {
    if (typeof sub === "boolean") return sub;
    const ajv = newAjv();
    return ajv.compile({ ...sub, $defs: rootSchema.$defs })(structuredClone(value));
  };
  function walk(s, value, ptr, set) {
    if (s === true || s === false || s === undefined) return;
    if (s.$ref !== undefined) walk(resolvePointer(rootSchema, decodeURIComponent(s.$ref.slice(1))).value, value, ptr, set);
    for (const sub of s.allOf || []) walk(sub, value, ptr, set);
    for (const sub of s.anyOf || []) if (holds(sub, value)) walk(sub, value, ptr, set);
    for (const sub of s.oneOf || []) if (holds(sub, value)) walk(sub, value, ptr, set);
    if (s.if !== undefined) walk(holds(s.if, value) ? s.then : s.else, value, ptr, set);
    if (typeof s.ref === "string" && typeof value === "string") {
      const r = resolve(s.ref, value);
      if (r.key !== undefined) set(r.key);
      else issues.push({ path: ptr, keyword: "ref" });
    }
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      for (const k of Object.keys(value)) {
        const setK = (v) => (value[k] = v);
        const kp = ptr + "/" + escapeToken(k);
        let evaluated = false;
        if (s.properties && k in s.properties) {
          walk(s.properties[k], value[k], kp, setK);
          evaluated = true;
        }
        for (const [re, sub] of Object.entries(s.patternProperties || {})) {
          if (new RegExp(re, "u").test(k)) {
            walk(sub, value[k], kp, setK);
            evaluated = true;
          }
        }
        if (!evaluated && s.additionalProperties !== undefined) walk(s.additionalProperties, value[k], kp, setK);
      }
    }
    if (Array.isArray(value)) {
      const prefix = s.prefixItems || [];
      value.forEach((item, i) => {
        const setI = (v) => (value[i] = v);
        walk(i < prefix.length ? prefix[i] : s.items, item, ptr + "/" + i, setI);
      });
    }
  }
  walk(rootSchema, data, "", () => {});
  return sortUnique(issues);
}

function checkRefsFile(file, doc) {
  if (typeof doc.description !== "string" || !Array.isArray(doc.groups) || typeof doc.instances !== "object") {
    fail(file, "needs description, instances and groups");
    return;
  }
  const resolve = resolveWith(doc.instances);
  doc.groups.forEach((g, gi) => {
    const gwhere = `${file} group ${gi} (${g.description})`;
    lintGroup(gwhere, g);
    const probe = run(g.schema, {});
    if (!probe.compiled) {
      fail(gwhere, "Ajv refuses to compile: " + probe.compileError);
      return;
    }
    (g.cases || []).forEach((c, ci) => {
      const where = `${gwhere} case ${ci} (${c.description})`;
      lintCase(where, c, true);
      const p = caseParams(c);
      if (!p.ok) {
        skipped++;
        return;
      }
      const r = run(g.schema, p.value, { verbose: true });
      if (c.ajv_note) {
        noted++;
        return;
      }
      let got;
      if (!r.valid) got = toIssues(r.errors, g.schema);
      else got = resolveRefs(g.schema, r.data, resolve);
      const valid = got.length === 0;
      if (valid !== c.valid) return fail(where, `model says valid=${valid} (${show(got)}), fixture says ${c.valid}`);
      if (valid && !deepEqual(r.data, c.checked)) {
        return fail(where, `model data ${JSON.stringify(r.data)} != checked ${JSON.stringify(c.checked)}`);
      }
      if (!valid && !deepEqual(got, bare(c.issues))) return fail(where, `model issues [${show(got)}] != fixture [${show(c.issues)}]`);
      passed++;
    });
  });
}

for (const { file, doc } of loadFixtures("params")) checkParamsFile(file, doc);
for (const { file, doc } of loadFixtures("refs")) checkRefsFile(file, doc);

console.log(`ajv-fixtures: ${noted} noted as deliberate differences, ${skipped} skipped as not JSON for JavaScript`);
console.log(`ajv-fixtures: ${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
