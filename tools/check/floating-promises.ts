import { readFileSync } from 'node:fs'
import { dirname } from 'node:path'
import ts from 'typescript'

// A promise nobody waits for: its rejection is lost and what it does may finish after the answer
// went out. Since the stores answer with promises on both engines (db/engine.ts), a call
// whose result is not awaited, returned, chained or voided is a bug this finds, as a linter's
// no-floating-promises rule would. test/house/promises.test.ts runs it over the whole program.

// Kept in a variable or property: whoever holds it awaits it.
const ASSIGNMENTS = new Set([ts.SyntaxKind.EqualsToken, ts.SyntaxKind.QuestionQuestionEqualsToken, ts.SyntaxKind.BarBarEqualsToken, ts.SyntaxKind.AmpersandAmpersandEqualsToken])

export interface Floating {
  file: string
  line: number
  text: string
}

/**
 * The program a tsconfig.json describes, and what TypeScript says is wrong with it (the config's
 * own errors, then tsc --noEmit's): one program, checked once, serves the type check and the
 * promises' (`npm run check`).
 */
export function programOf(configPath: string): { program: ts.Program; diagnostics: readonly ts.Diagnostic[] } {
  // Read by Node: a missing or unreadable tsconfig.json fails with Node's error, which names it.
  const json = ts.parseJsonText(configPath, readFileSync(configPath, 'utf8'))
  const config = ts.parseJsonSourceFileConfigFileContent(json, ts.sys, dirname(configPath), {}, configPath)
  const program = ts.createProgram({ rootNames: config.fileNames, options: config.options })
  return { program, diagnostics: [...config.errors, ...ts.getPreEmitDiagnostics(program)] }
}

/** Each expression statement of the program's own files whose value is a promise left alone. */
export function floatingPromises(program: ts.Program): Floating[] {
  const checker = program.getTypeChecker()
  const found: Floating[] = []

  const isPromise = (type: ts.Type): boolean => {
    if (type.isUnion()) return type.types.some(isPromise)
    // A Promise itself: Fastify's instance and reply are thenables meant to be left alone.
    return type.getSymbol()?.getName() === 'Promise'
  }

  // tap queues its subtests and assertions itself; a rejection handler handles what it chains.
  const handledCall = (expression: ts.Expression): boolean => {
    if (!ts.isCallExpression(expression) || !ts.isPropertyAccessExpression(expression.expression)) return false
    const { name, expression: receiver } = expression.expression
    if (name.text === 'catch' || (name.text === 'then' && expression.arguments.length === 2)) return true
    const declarations = checker.getTypeAtLocation(receiver).getSymbol()?.getDeclarations() ?? []
    return declarations.some((d) => /[\\/]@tapjs[\\/]/.test(d.getSourceFile().fileName))
  }

  for (const source of program.getSourceFiles()) {
    if (source.isDeclarationFile || source.fileName.includes('/node_modules/')) continue
    const visit = (node: ts.Node) => {
      // A promise asked whether it is true always is: `!users.isStaff(...)` would let everyone in.
      const condition = ts.isIfStatement(node) || ts.isWhileStatement(node)
        ? node.expression
        : ts.isConditionalExpression(node)
        ? node.condition
        : ts.isPrefixUnaryExpression(node) && node.operator === ts.SyntaxKind.ExclamationToken
          ? node.operand
          : ts.isBinaryExpression(node) && (node.operatorToken.kind === ts.SyntaxKind.AmpersandAmpersandToken || node.operatorToken.kind === ts.SyntaxKind.BarBarToken)
            ? node.left
            : undefined
      if (condition && isPromise(checker.getTypeAtLocation(condition))) {
        const { line } = source.getLineAndCharacterOfPosition(condition.getStart(source))
        found.push({ file: source.fileName, line: line + 1, text: `a promise as a condition: ${condition.getText(source).split('\n')[0]}` })
      }
      if (ts.isExpressionStatement(node)) {
        let expression = node.expression
        while (ts.isParenthesizedExpression(expression)) expression = expression.expression
        const handled = ts.isVoidExpression(expression) || ts.isAwaitExpression(expression) ||
          (ts.isBinaryExpression(expression) && ASSIGNMENTS.has(expression.operatorToken.kind)) ||
          handledCall(expression)
        if (!handled && isPromise(checker.getTypeAtLocation(expression))) {
          const { line } = source.getLineAndCharacterOfPosition(node.getStart(source))
          found.push({ file: source.fileName, line: line + 1, text: node.getText(source).split('\n')[0] })
        }
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
  }
  return found
}
