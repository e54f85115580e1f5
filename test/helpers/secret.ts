/** The HS256 secret every test server is started with (tokens from `mintToken(SECRET, …)`). */
export const SECRET = 'taskhandle-test-secret-0123456789abcdef';
