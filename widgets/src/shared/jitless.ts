// Imported first by every widget, before the SDK: zod builds the SDK's
// message schemas when its modules load, and a schema built while zod may
// compile code probes `new Function` once, which the widget's CSP (no
// 'unsafe-eval') reports as a violation. The App constructor turns this off,
// but only after those schemas exist; turning it off here, first, means no
// probe ever runs.
import { config } from "zod/v4/core";

config({ jitless: true });
