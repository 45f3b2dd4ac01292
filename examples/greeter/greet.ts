/** One definition for the demo to find. */
export function greet(name: string): string {
  return `Hello, ${name}!`;
}
