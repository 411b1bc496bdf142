#!/usr/bin/env node
// Ajv 8 oracle for the parameter checks of github.com/actionreg/actions.
//
// Input on stdin: one JSON object {"schema": ..., "params": ...} or a JSON
// array of such objects. An absent "params" stands for {} (nil parameters).
// An absent "schema" stands for {"type":"object","additionalProperties":false}.
// Output on stdout: one result per input (an array when the input is one),
//
//   {"compiled": bool, "compileError": string?, "valid": bool,
//    "data": <params after defaults>, "errors": [{instancePath, keyword, params}]}
//
// The Ajv configuration is the one JavaScript hosts of this format use: draft
// 2020-12, strict (with the type/tuple/required sub-checks relaxed),
// useDefaults, allErrors and no format vocabulary, plus a no-op "ref" keyword.

"use strict";

const Ajv2020 = require("ajv/dist/2020").default;

function newAjv(extraOptions) {
  const ajv = new Ajv2020({
    ...extraOptions,
    strict: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    useDefaults: true,
    allErrors: true,
    validateFormats: false,
  });
  ajv.addKeyword({ keyword: "ref", schemaType: "string" });
  return ajv;
}

// NO_PARAMETERS is the schema an action without "parameters" stands for.
const NO_PARAMETERS = { type: "object", additionalProperties: false };

// run compiles schema with a fresh Ajv (so that schemas sharing an $id do not
// collide) and validates a deep copy of params. It returns Ajv's raw errors;
// extra Ajv options (such as verbose) may be given for callers that need the
// schema side of an error.
function run(schema, params, extraOptions) {
  const data = structuredClone(params === undefined ? {} : params);
  const ajv = newAjv(extraOptions);
  let validate;
  try {
    // An absent schema is an action without parameters: it takes {} only.
    validate = ajv.compile(schema === undefined ? NO_PARAMETERS : schema);
  } catch (e) {
    return { compiled: false, compileError: message(e), valid: false, data, errors: [] };
  }
  let valid;
  try {
    valid = validate(data);
  } catch (e) {
    return { compiled: true, runError: message(e), valid: false, data, errors: [] };
  }
  return { compiled: true, valid: !!valid, data, errors: validate.errors || [] };
}

function message(e) {
  return String(e && e.message ? e.message : e);
}

// check runs one {schema, params} pair and shapes the answer for stdout.
function check(input) {
  const r = run(input.schema, input.params);
  r.errors = r.errors.map((e) => ({ instancePath: e.instancePath, keyword: e.keyword, params: e.params }));
  return r;
}

module.exports = { newAjv, run, check, NO_PARAMETERS };

if (require.main === module) {
  let text = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk) => (text += chunk));
  process.stdin.on("end", () => {
    let input;
    try {
      input = JSON.parse(text);
    } catch (e) {
      process.stderr.write("oracle: stdin is not JSON: " + e.message + "\n");
      process.exit(2);
    }
    const out = Array.isArray(input) ? input.map(check) : check(input);
    process.stdout.write(JSON.stringify(out, null, 2) + "\n");
  });
}
