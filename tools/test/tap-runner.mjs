// What tap's runner loads first when npm test starts it (tools/test/run.js): the modules of
// node_modules left out of what each test process records of the modules it loads.
//
// @tapjs/processinfo records, in every test process, each module the process loads: it reads the
// file again, measures its lines and, for a file with a source map, parses the map. Tap's runner
// names what it leaves out (`_TAPJS_PROCESSINFO_EXCLUDE_`: tap's own folders and Node's modules),
// sets it itself as it starts, whatever the environment said, and gives it to every process it
// starts; node_modules is not in it. So every test process recorded every module of every package
// it loaded, tap's own included (hundreds of source maps): about 1.3 s of CPU a process, where
// loading tap, the app and the fixtures without it took 1.7 s (the least of six runs each, a quiet
// machine, 2026-12-04). What those records are for is tap's `--changed`, which the suite does not
// use, and the coverage of files that carry source maps, which ours do not (Node runs our
// TypeScript with its types stripped, every line and column kept), and node_modules is outside
// the coverage anyway.
//
// The runner's environment is wrapped so that its own assignment of that name keeps ours, which
// its spawning then gives to each test process. Should a later tap name it otherwise, nothing
// breaks: the processes record everything again, as before. test/house/child-env.test.ts checks,
// within npm test, that a test process leaves node_modules out.
/* c8 ignore start */
const NAME = '_TAPJS_PROCESSINFO_EXCLUDE_'
const LEFT_OUT = String(/(^(node|tapmock):|[\\/](\.tap|tap-snapshots|node_modules)[\\/])/)
const environment = process.env
environment[NAME] = LEFT_OUT
process.env = new Proxy(environment, {
  set(target, name, value) {
    target[name] = name === NAME ? LEFT_OUT : value
    return true
  },
})
/* c8 ignore stop */
