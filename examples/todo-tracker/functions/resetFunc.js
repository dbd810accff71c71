// Password reset function of the local-userpass provider. This example never resets passwords through a
// function call; a real app would verify the user's identity here before answering "success".
exports = ({ token, tokenId, username, password }) => {
  return { status: "fail" };
};
