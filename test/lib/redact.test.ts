import t from 'tap'
import { redactUrl } from '../../lib/redact.ts'

// Engines: one: nothing here reaches a database of the suite's engine.

t.test('credential query values never survive', async (t) => {
  t.equal(redactUrl('/demo'), '/demo')
  t.equal(redactUrl('/demo?page=2'), '/demo?page=2')
  t.equal(redactUrl('/demo?auth=secret&page=2'), '/demo?auth=[redacted]&page=2')
  t.equal(redactUrl('/demo?SSO=abc%2Bdef'), '/demo?SSO=[redacted]')
  t.equal(redactUrl('/demo?access_token=x'), '/demo?access_token=[redacted]')
  t.equal(redactUrl('/demo?q=service_pat_abc'), '/demo?q=[redacted]')
  t.equal(redactUrl('/demo?q=service%5Fpat%5Fabc'), '/demo?q=[redacted]', 'encoded')
  t.equal(redactUrl('/demo?q=%E0%A4%A&auth'), '/demo?q=%E0%A4%A&auth=[redacted]', 'undecodable pairs and bare names')
  t.equal(redactUrl('/demo?au%74h=SECRETKEY123'), '/demo?au%74h=[redacted]', 'an encoded name is judged decoded')
  t.equal(redactUrl('/demo?service_pat_abc=1&page=2'), '/demo?[redacted]&page=2', 'a token as a parameter name')
  t.equal(redactUrl('/demo?service%5Fpat%5Fabc'), '/demo?[redacted]')
  t.equal(redactUrl('/demo/discussions/service_pat_abc/x?page=1'), '/demo/discussions/[redacted]/x?page=1', 'a token in the path')
  t.equal(redactUrl('/demo/service%5Fpat%5Fabc'), '/demo/[redacted]')
  t.equal(redactUrl('/demo/service_pat_abc'), '/demo/[redacted]', 'a token in a path without a query or anything encoded')
})
