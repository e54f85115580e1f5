// Starts GraphiQL on the page src/faces/graphql/graphiql.ts serves: Monaco's workers come from
// this server, a development token left in GraphiQL's storage by an earlier start is replaced
// by the current one, then the editor renders.

const { workers, devToken, ...options } = JSON.parse(
  document.getElementById('graphiql-options').textContent,
);

self.MonacoEnvironment = {
  globalAPI: false,
  getWorkerUrl: (_moduleId, label) => workers[label] ?? workers.editorWorkerService,
};

/**
 * GraphiQL keeps its tabs' headers in localStorage. A restart with a new development secret
 * mints a new token; the one it stored would then fail every operation UNAUTHENTICATED. The
 * token this page last saw is remembered, and wherever GraphiQL stored it, it is replaced.
 * Headers a person typed (another token included) are left as they are.
 */
function refreshStoredToken(token) {
  const key = 'taskhandle:graphiql:dev-token';
  try {
    const before = localStorage.getItem(key);
    if (before && before !== token) {
      for (let i = 0; i < localStorage.length; i++) {
        const name = localStorage.key(i);
        const value = name?.startsWith('graphiql') ? localStorage.getItem(name) : null;
        if (value?.includes(before)) localStorage.setItem(name, value.split(before).join(token));
      }
    }
    localStorage.setItem(key, token);
  } catch {
    // No storage (a private window, a policy): GraphiQL then keeps nothing either.
  }
}

if (devToken) refreshStoredToken(devToken);
YogaGraphiQL.renderYogaGraphiQL(document.querySelector('#root'), options);
