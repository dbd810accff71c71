// Failures a route reports to the client as the platform's error body `{error, error_code, link}`.

export class ApiError extends Error {
  constructor(readonly status: number, readonly errorCode: string, message: string) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The two 401 bodies that make both SDKs refresh the access token or log the user out (client-api.md §3.1). */
export const invalidAccessToken = () => new ApiError(401, 'InvalidSession', 'invalid session: access token expired');
export const invalidRefreshToken = () => new ApiError(401, 'InvalidSession', 'invalid session: failed to find refresh token');

/**
 * The platform's answer to a client route that needs a user when the request carries no token (no
 * Authorization header, or `Bearer` with nothing after it): as the platform answered the native SDKs.
 */
export const mustAuthenticate = () => new ApiError(401, 'MissingAuthReq', 'must authenticate first');

export const badRequest = (message: string) => new ApiError(400, 'BadRequest', message);
export const authError = (message: string) => new ApiError(401, 'AuthError', message);
