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
  /** The parameters of shop.delete. */
  type DeleteParams = {
    /** The id or the exact display name of an Order. */
    order: Ref<"Order">;
  };
  /** The parameters of shop.list_items. */
  type ListItemsParams = Record<string, never>;
  type ListItemsResult_item = {
    id: string;
    parts?: ListItemsResult_item[];
  };
  /** What shop.list_items gives. */
  type ListItemsResult = ListItemsResult_item[];
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
  list_items(params?: shop.ListItemsParams): Promise<shop.ListItemsResult>;
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
