// Loader hooks of import-recorder.mjs: resolve() passes every request on unchanged and posts
// the resolved URL when it lies inside a watched package.
let port = null
let watch = []

export function initialize (data) {
  port = data.port
  watch = data.watch.map((name) => `/node_modules/${name}/`)
}

export async function resolve (specifier, context, next) {
  const result = await next(specifier, context)
  if (port !== null && watch.some((w) => result.url.includes(w))) port.postMessage(result.url)
  return result
}
