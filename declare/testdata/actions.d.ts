/** The id or exact display name of a record of the named kind, as a ref parameter takes it. */
type Ref<Kind extends string> = string & { readonly __ref: Kind };

declare namespace new_ {
  type Tree_node = {
    children?: Tree_node[];
    label: string;
  };
  /** The parameters of new_.tree. */
  type TreeParams = {
    anything?: unknown;
    both?: {
      a: string;
    } & {
      b?: number;
    };
    nothing_of?: unknown;
    root?: Tree_node;
    shape?: "circle" | "square" | number;
  };
}

declare const new_: {
  /**
   * A namespace named with a reserved word, a recursive schema, combinators.
   *
   * Destructive: it may delete or overwrite.
   *
   * Tool: new-tree.
   */
  tree(params?: new_.TreeParams): Promise<unknown>;
};

declare namespace shop {
  /** The parameters of shop.List_items. */
  type ListItemsParams = {
    page?: number;
  };
  /** The parameters of shop.delete. */
  type DeleteParams = {
    /** The id or the exact display name of an Order. */
    order: Ref<"Order">;
  };
  /** The parameters of shop.list_items. */
  type T_list_itemsParams = Record<string, never>;
  type T_list_itemsResult_item = {
    id: string;
    parts?: T_list_itemsResult_item[];
  };
  /** What shop.list_items gives. */
  type T_list_itemsResult = T_list_itemsResult_item[];
  type Order_address = {
    city: string;
    street?: string;
  };
  /** The parameters of shop.order. */
  type OrderParams = {
    /** A key that is no identifier. */
    "a/b"?: string;
    extras?: {
      [key: string]: number;
    };
    gift?: true;
    /** What to order. The id or the exact display name of a Product. */
    item: Ref<"Product">;
    note?: string | null;
    point?: [number, number?];
    /** @default 1 */
    qty?: number;
    ship?: {
      /** @default false */
      fast?: boolean;
      to: Order_address;
    };
    speed?: "slow" | "fast" | null;
    tags?: string[];
    /** Format: date-time. */
    when?: string;
  };
  /** What shop.order gives. */
  type OrderResult = {
    lines: Array<string | {
      sku: string;
    }>;
    order: Ref<"Order">;
  };
}

declare const shop: {
  /**
   * A name whose type name another action (list_items) also gives: the second in name order, list_items, has its types named T_list_items.
   *
   * Reads only.
   *
   * Tool: shop-List_items.
   */
  List_items(params?: shop.ListItemsParams): Promise<unknown>;
  /**
   * An action named with a reserved word.
   *
   * Destructive: it may delete or overwrite.
   *
   * Tool: shop-delete.
   */
  delete(params: shop.DeleteParams): Promise<unknown>;
  /**
   * List items.
   *
   * Reads only.
   *
   * Tool: shop-list_items.
   */
  list_items(params?: shop.T_list_itemsParams): Promise<shop.T_list_itemsResult>;
  /**
   * Order an item.
   *
   * Orders an item. A comment end *\/ in a description is escaped.
   *
   * Destructive: it may delete or overwrite.
   *
   * Tool: shop-order.
   */
  order(params: shop.OrderParams): Promise<shop.OrderResult>;
};
