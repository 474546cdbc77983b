/**
 * Node 20 lacks Promise.withResolvers (Node >= 22), which libp2p 3's dependencies call while
 * they load. Import this module FIRST (before anything that imports libp2p) in every entry
 * that runs from source under tsx; the bundle dist/peer.js gets the same code in its banner.
 */
interface WithResolvers<T> { promise: Promise<T>, resolve: (value: T | PromiseLike<T>) => void, reject: (reason?: unknown) => void }

if (typeof (Promise as { withResolvers?: unknown }).withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers<T> (this: PromiseConstructor): WithResolvers<T> {
      let resolve!: WithResolvers<T>['resolve']
      let reject!: WithResolvers<T>['reject']
      const promise = new this<T>((res, rej) => { resolve = res; reject = rej })
      return { promise, resolve, reject }
    }
  })
}

export {}
