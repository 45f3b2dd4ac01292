/** One mistake for the demo to find: greet() takes a name, not a number. */
import { greet } from "./greet";

console.log(greet("world"));
console.log(greet(42));
