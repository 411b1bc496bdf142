/** The id or exact display name of a record of the named kind, as a ref parameter takes it. */
type Ref<Kind extends string> = string & { readonly __ref: Kind };

declare namespace carbon {
  /** The parameters of carbon.record_emissions. */
  type RecordEmissionsParams = {
    /** The actor, named in any of the dataset's languages. The id or the exact display name of an actor. */
    actor: Ref<"actor">;
    /** Tonnes of CO2 emitted in the period. */
    co2_t: number;
    /**
     * The reporting year.
     * @default "2024"
     */
    period?: string;
  };
  /** What carbon.record_emissions gives. */
  type RecordEmissionsResult = {
    actor: string;
    co2_t: number;
    period: string;
    previous_co2_t?: null | number;
  };
  /** The parameters of carbon.total_emissions. */
  type TotalEmissionsParams = {
    /**
     * The reporting year.
     * @default "2024"
     */
    period?: string;
    /** Only actors of this type. */
    type?: "plant" | "warehouse" | "depot" | "supplier";
  };
  /** What carbon.total_emissions gives. */
  type TotalEmissionsResult = {
    actors: number;
    period: string;
    total_co2_t: number;
    type?: string;
  };
}

declare const carbon: {
  /**
   * Record emissions.
   *
   * Sets an actor's CO2 emissions for a period, replacing any earlier figure.
   *
   * Destructive: it may delete or overwrite.
   *
   * Tool: carbon-record_emissions.
   */
  record_emissions(params: carbon.RecordEmissionsParams): Promise<carbon.RecordEmissionsResult>;
  /**
   * Total emissions.
   *
   * Sums the CO2 emissions of a period over the actors, or over the actors of one type.
   *
   * Reads only.
   *
   * Tool: carbon-total_emissions.
   */
  total_emissions(params?: carbon.TotalEmissionsParams): Promise<carbon.TotalEmissionsResult>;
};

declare namespace supply {
  /** The parameters of supply.create_actor. */
  type CreateActorParams = {
    /** The actor's name. */
    display_name: string | {
      [key: string]: string;
    };
    /** The new actor's id: lower case letters, digits and underscores. */
    id: string;
    /** @default "plant" */
    type?: "plant" | "warehouse" | "depot" | "supplier";
  };
  /** What supply.create_actor gives. */
  type CreateActorResult = {
    display_name: {
      [key: string]: string;
    };
    id: string;
    key: string;
    type: string;
  };
  /** The parameters of supply.delete_actor. */
  type DeleteActorParams = {
    /** The actor, named in any of the dataset's languages. The id or the exact display name of an actor. */
    actor: Ref<"actor">;
  };
  /** What supply.delete_actor gives. */
  type DeleteActorResult = {
    deleted: string;
    emissions: unknown;
    key: string;
  };
  /** The parameters of supply.get_actor. */
  type GetActorParams = {
    /** The actor, named in any of the dataset's languages. The id or the exact display name of an actor. */
    actor: Ref<"actor">;
  };
  /** What supply.get_actor gives. */
  type GetActorResult = {
    co2_t: null | {
      [key: string]: number;
    };
    display_name: null | {
      [key: string]: string;
    };
    id: string;
    key: string;
    type: string;
  };
  /** The parameters of supply.list_actors. */
  type ListActorsParams = {
    /** Where to start: give the cursor a previous answer's next or nextCall holds, as it is; leave it out for the first page. */
    cursor?: string;
    /**
     * The language of the names.
     * @default "en"
     */
    lang?: "en" | "fr";
    /**
     * At most this many actors per page.
     * @default 100
     */
    limit?: number;
    /** Only actors of this type. */
    type?: "plant" | "warehouse" | "depot" | "supplier";
  };
  /** What supply.list_actors gives. */
  type ListActorsResult = {
    items: Array<{
      id: string;
      key: string;
      name: string;
      type: string;
    }>;
    next?: string;
  };
}

declare const supply: {
  /**
   * Create an actor.
   *
   * Adds an actor to the supply chain and gives it back with its key. It may refuse with: id_taken (retry after changing the call).
   *
   * Tool: supply-create_actor.
   */
  create_actor(params: supply.CreateActorParams): Promise<supply.CreateActorResult>;
  /**
   * Delete an actor.
   *
   * Deletes an actor and every emission recorded for it.
   *
   * Destructive: it may delete or overwrite.
   *
   * Tool: supply-delete_actor.
   */
  delete_actor(params: supply.DeleteActorParams): Promise<supply.DeleteActorResult>;
  /**
   * Get an actor.
   *
   * Gives one actor with its names in every language and its emissions per period.
   *
   * Reads only.
   *
   * Tool: supply-get_actor.
   */
  get_actor(params: supply.GetActorParams): Promise<supply.GetActorResult>;
  /**
   * List actors.
   *
   * Lists the actors of the supply chain, sorted by id, with their names in one language, a page at a time: call again with the cursor an answer gives (next, or nextCall when the answer was bounded) for the next page.
   *
   * Reads only.
   *
   * Tool: supply-list_actors.
   */
  list_actors(params?: supply.ListActorsParams): Promise<supply.ListActorsResult>;
};
