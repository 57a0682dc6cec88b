// What tap's runner loads first when npm test starts it (tools/test/run.js): the modules of
// node_modules left out of what each test process records of the modules it loads
// (docs/development.md, "What a test process records of its modules").
//
// @tapjs/processinfo records, in every test process, each module the process loads: it reads the
// file again, measures its lines and, for a file that names a source map, looks the map up again
// for every such file still waiting to run (tap's own packages ship hundreds, and an ES module
// graph loads them all before any runs). Tap's runner names what it leaves out
// (`_TAPJS_PROCESSINFO_EXCLUDE_`: tap's own folders and Node's modules) as it starts, whatever the
// environment said, and gives it to every process it starts; node_modules is not in it. What those
// records serve is tap's `--changed`, which the suite does not use, and the coverage of files that
// carry source maps, which ours do not (Node runs our TypeScript with its types stripped, every
// line and column kept); node_modules is outside the coverage anyway.
//
// One module of node_modules stays recorded: @tapjs/mock's `import.mjs`, the first module tap
// has a test process load through the hook. Recording a module is what starts the tracking (its
// coverage session, and the exit handler that writes coverage), and it must start before
// @tapjs/core loads async-hook-domain, which keeps the `process.emit` it finds and puts it back
// when the root test ends: started any later, the exit handler is gone with it and the process
// writes no coverage (found in issue 64: a fresh clone's run wrote none).
//
// The runner's environment is wrapped so that its own assignment of that name keeps ours, which
// its spawning then gives to each test process. Should a later tap name or order these otherwise,
// the run says so: no coverage is written and it fails ("No coverage generated"), or the processes
// record everything again, as before. test/house/child-env.test.ts checks, within npm test, what
// a test process leaves out.
/* c8 ignore start */
const NAME = '_TAPJS_PROCESSINFO_EXCLUDE_'
const LEFT_OUT = String(/(^(node|tapmock):|[\\/](\.tap|tap-snapshots)[\\/]|[\\/]node_modules[\\/](?!@tapjs[\\/]mock[\\/]dist[\\/]esm[\\/]import\.mjs$))/)
const environment = process.env
environment[NAME] = LEFT_OUT
process.env = new Proxy(environment, {
  set(target, name, value) {
    target[name] = name === NAME ? LEFT_OUT : value
    return true
  },
})
/* c8 ignore stop */
