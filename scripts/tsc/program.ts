// A program written against the example host's declarations
// (examples/supplychain/testdata/supplychain.d.ts), as a model in code
// mode would write it. check.sh compiles it with tsc --strict; it never
// runs here. Each @ts-expect-error line must fail to compile: the
// declarations are strict enough to catch it.

async function plantsOver(limit: number): Promise<string[]> {
  const heavy: string[] = [];
  for (const a of (await supply.list_actors({ type: "plant", lang: "fr" })).items) {
    const actor = await supply.get_actor({ actor: a.id as Ref<"actor"> });
    const co2 = actor.co2_t?.["2024"] ?? 0;
    if (co2 > limit) {
      heavy.push(`${a.name}: ${co2} t`);
    }
  }
  const total = await carbon.total_emissions({ period: "2024" });
  heavy.push(`total ${total.total_co2_t} t over ${total.actors} actors`);
  return heavy;
}

async function rename(): Promise<void> {
  const made = await supply.create_actor({ id: "mill_7", display_name: { en: "Mill 7", fr: "Moulin 7" } });
  await carbon.record_emissions({ actor: made.id as Ref<"actor">, co2_t: 12.5 });
  // Every listing call may leave its parameters out.
  await supply.list_actors();

  // @ts-expect-error: "shop" is not a type of actor
  await supply.list_actors({ type: "shop" });
  // @ts-expect-error: the actor is required
  await supply.get_actor({});
  // @ts-expect-error: a plain string is not a ref
  await supply.delete_actor({ actor: made.id });
  // @ts-expect-error: co2_t is a number
  await carbon.record_emissions({ actor: made.id as Ref<"actor">, co2_t: "12" });
}

void plantsOver(100);
void rename();
