/**
 * A gradient-boosted model's two trees over customer age (through featureMap) and offer priority,
 * with covers as XGBoost dumps them (explanations.test.ts checks its TreeSHAP values by hand).
 */
export const TREES = [
  {
    nodeid: 0, split: "age", split_condition: 30, yes: 1, no: 2, missing: 1, cover: 100,
    children: [
      { nodeid: 1, leaf: -0.5, cover: 40 },
      {
        nodeid: 2, split: "offer.priority", split_condition: 60, yes: 3, no: 4, missing: 3, cover: 60,
        children: [{ nodeid: 3, leaf: 0.2, cover: 45 }, { nodeid: 4, leaf: 0.9, cover: 15 }],
      },
    ],
  },
  {
    nodeid: 0, split: "offer.priority", split_condition: 40, yes: 1, no: 2, missing: 2, cover: 100,
    children: [
      { nodeid: 1, split: "age", split_condition: 50, yes: 3, no: 4, missing: 3, cover: 30, children: [{ nodeid: 3, leaf: 0.1, cover: 20 }, { nodeid: 4, leaf: -0.3, cover: 10 }] },
      { nodeid: 2, leaf: 0.05, cover: 70 },
    ],
  },
];
