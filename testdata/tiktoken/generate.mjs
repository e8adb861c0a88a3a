// Writes counts.json: texts and their o200k_base token counts by OpenAI's
// tiktoken (its official WebAssembly build), for the Go tokenizer's tests.
// Run: npm ci && node generate.mjs
import { get_encoding } from "tiktoken";
import { readFileSync, writeFileSync } from "node:fs";

const enc = get_encoding("o200k_base");

// Corners of the splitting pattern and of byte-pair encoding.
const texts = [
  "hello world", "Hello World", "HELLO world", "don't I'LL we're THEY'VE she'd it's It'S ſ'ſ he'ſ x'S",
  "camelCaseWord XMLHttpRequest iOS ĲssEL", "  indented\n\n\tcode();\r\n  }\n",
  "1234567 3.14159 ١٢٣٤ ½ ⅷ 12ab 1a2b", "a  b   c    ", "   ", "\n", "\r\n\r\n  \n x",
  "x \n", "x  \t\n\ny", "trailing   ", " ?!@#$%^&*()", "a//b ///\n//\r\n", "path/to/file.go:12:3",
  "Ünïcödé ñandú über-straße Ǆemal ǅemal ǆemal", "日本語のテキスト、句読点。", "한국어 텍스트", "العربية نص",
  "हिन्दी पाठ", "e\u0301 \u0301e \u0301\u0301 x\u0301y", "ʰʲ ʼapostrophe ˈstress", "\u00a0nbsp\u00a0 \u2003em\u2003 \u0085nel",
  "\u200bzero\u200bwidth", "emoji 🎉🎉 👍🏽 👨‍👩‍👧", "tab\tseparated\tvalues", "'s 's'", "'", "a'", "A'", "é'll",
  "--flag=value -x", "{\"json\": [1, 2, 3], \"k\": null}", "<|endoftext|>", "\x00\x01\x7f", "a\x7fb", "ǅ", "ˉˉ", "Aʰ", "ʰA",
  "Ǆʰ", "x\u0300\u0300", "\u0300", " \u0300a", "!\u0300", "1\u0300", "aA", "Aa", "aAa", "ʰaʰ", "\u0300'S",
  "\n \n", "\n  \n x", " \n \n x", "def f():\n    x = 1\n    \n    return x\n", "if x {\n\t\t\n\t}\n",
  " ".repeat(200), "\n".repeat(50), "=".repeat(300), "a".repeat(500), "ab".repeat(400), "🎉".repeat(100),
  "x".repeat(70) + " " + "y".repeat(70), "0123456789".repeat(20),
  Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919) % 256)).toString("base64"),
];

// Real text: files of this repository, as they were when this was written.
for (const f of ["../../README.md", "../../budget/bpe.go", "../../rego/harness.rego", "../../e2e/gateway.test.mjs",
  "../../compiler/testdata/builtin.data.json"]) {
  texts.push(readFileSync(new URL(f, import.meta.url), "utf8"));
}

// Text that looks like a special token is ordinary text: nothing a tool
// returns is a special token.
const counts = texts.map((text) => ({ text, tokens: enc.encode(text, [], []).length }));
writeFileSync(new URL("counts.json", import.meta.url), JSON.stringify(counts, null, 1) + "\n");
console.log(`${counts.length} texts, ${counts.reduce((n, c) => n + c.tokens, 0)} tokens`);
