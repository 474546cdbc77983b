// Placeholder for npm scripts whose feature has not landed yet (see README).
console.log(`${process.argv[2] ?? 'this script'}: not yet available`)
