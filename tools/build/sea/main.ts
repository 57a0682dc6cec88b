// The single executable's entry point: what cli/service-desk.js does in a checkout. The CLI is
// imported here, not at the top, so that a failure to prepare the cache folder (which happens while
// its modules load) is one line and exit code 1, like any other failure of the command.
import('../../../cli/main.ts').then(
  async ({ main }) => {
    const code = await main(process.argv.slice(2))
    if (code !== undefined) process.exitCode = code
  },
  (error: Error) => {
    process.stderr.write(`service-desk: ${error.message}\n`)
    process.exitCode = 1
  },
)
