// Password resets are not offered by this app: every reset request is refused.
exports = function resetFunc({ token, tokenId, username, password }) {
  return { status: 'fail' };
};
