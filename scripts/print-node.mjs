// Prints which Node.js runs the scripts: npm puts node_modules/.bin (the pinned `node` package,
// Node 24 LTS) ahead of the system's node, so CI shows the version the tests really ran on.
console.log(`Node.js ${process.version} (${process.execPath})`);
