// A program written against supplychain.d.ts, as a model in code mode
// writes one for the run_program tool: the body of an async function,
// plain JavaScript (a ref is cast with a JSDoc comment, which runs as a
// comment). scripts/tsc/check.sh type-checks it with tsc --strict;
// TestProgramAgainstDeclarations runs it.
const heavy = [];
for (const a of (await supply.list_actors({})).items) {
  const actor = await supply.get_actor({ actor: /** @type {Ref<"actor">} */ (a.id) });
  const co2 = actor.co2_t?.["2024"] ?? 0;
  if (co2 > 1000) heavy.push(`${a.id}: ${co2} t`);
}
const total = await carbon.total_emissions({ period: "2024" });
return { heavy, actors: total.actors, total_co2_t: total.total_co2_t };
