/**
 * Every type that appears in a public signature must be importable from the
 * package whose signature it is: with a strict node_modules layout (pnpm) a
 * consumer cannot import from that package's own dependencies.
 *
 * Resolves each entry point as a consumer would (from `consumerDir`), then
 * walks the declarations of everything exported and of every type they
 * reference, transitively, within @golem-stream packages. A named type
 * (interface, type alias, class, enum) reached that way must be exported by
 * one of the package's entry points. Members marked `@internal` and private
 * members are not public signatures.
 */
import path from "node:path";
import ts from "typescript";
import { cachingHost } from "./type-check.js";

export function unexportedPublicTypes(consumerDir: string, packageName: string, entryPoints: readonly string[]): string[] {
  const probes = entryPoints.map((entry, index) => ({
    file: path.join(consumerDir, `__probe_${index}.ts`),
    text: `export * from "${entry}";\n`,
  }));
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    types: [],
  };
  const host = cachingHost(options);
  const readProbe = (file: string) => probes.find((probe) => path.resolve(probe.file) === path.resolve(file));
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.getSourceFile = (file, languageVersion, ...rest) => {
    const probe = readProbe(file);
    return probe === undefined ? getSourceFile(file, languageVersion, ...rest) : ts.createSourceFile(file, probe.text, languageVersion);
  };
  host.fileExists = (file) => readProbe(file) !== undefined || fileExists(file);
  const program = ts.createProgram(
    probes.map((probe) => probe.file),
    options,
    host,
  );
  const checker = program.getTypeChecker();
  const resolve = (symbol: ts.Symbol) => (symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol);
  const exported = new Set<ts.Symbol>();
  for (const probe of probes) {
    const source = program.getSourceFile(probe.file);
    const moduleSymbol = source === undefined ? undefined : checker.getSymbolAtLocation(source);
    if (moduleSymbol === undefined) throw new Error(`${packageName}: cannot resolve ${probe.text.trim()} from ${consumerDir}`);
    for (const symbol of checker.getExportsOfModule(moduleSymbol)) exported.add(resolve(symbol));
  }
  if (exported.size === 0) throw new Error(`${packageName}: no exports found (entry points not resolved?)`);

  const ours = (node: ts.Node) => /[\\/]node_modules[\\/]@golem-stream[\\/]/.test(node.getSourceFile().fileName);
  const seen = new Set<ts.Symbol>();
  const missing = new Map<string, string>();
  const visitSymbol = (raw: ts.Symbol, via: string): void => {
    const symbol = resolve(raw);
    if (seen.has(symbol)) return;
    seen.add(symbol);
    for (const declaration of symbol.declarations ?? []) {
      if (!ours(declaration)) continue;
      const named =
        ts.isInterfaceDeclaration(declaration) ||
        ts.isTypeAliasDeclaration(declaration) ||
        ts.isClassDeclaration(declaration) ||
        ts.isEnumDeclaration(declaration);
      if (named && !exported.has(symbol))
        missing.set(symbol.name, `${symbol.name} (used by ${via}, declared in ${path.basename(declaration.getSourceFile().fileName)})`);
      visitNode(declaration, symbol.name);
    }
  };
  const visitNode = (node: ts.Node, via: string): void => {
    if (ts.getJSDocTags(node).some((tag) => tag.tagName.text === "internal")) return;
    if (ts.canHaveModifiers(node) && ts.getModifiers(node)?.some((modifier) => modifier.kind === ts.SyntaxKind.PrivateKeyword)) return;
    let name: ts.Node | undefined;
    if (ts.isTypeReferenceNode(node)) name = node.typeName;
    else if (ts.isExpressionWithTypeArguments(node)) name = node.expression;
    else if (ts.isTypeQueryNode(node)) name = node.exprName;
    else if (ts.isImportTypeNode(node)) name = node.qualifier;
    if (name !== undefined) {
      const symbol = checker.getSymbolAtLocation(ts.isQualifiedName(name) ? name.right : name);
      if (symbol !== undefined) visitSymbol(symbol, via);
    }
    ts.forEachChild(node, (child) => visitNode(child, via));
  };
  for (const symbol of [...exported]) visitSymbol(symbol, symbol.name);
  return [...missing.values()].sort();
}
