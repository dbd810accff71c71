// A public function for SDK demos: `user.functions.sum(1, 2)` returns 3.
exports = function (a, b) {
  return a + b;
};
