// A small client written for the Atlas Data API, with fetch and canonical Extended
// JSON. Only two things point it at the gateway: BASE_URL
// (https://data.mongodb-api.com/app/<app id>/endpoint/data/v1 before) and API_KEY.
// Prints one JSON line: what it inserted, read back, updated and deleted.
const { BASE_URL, API_KEY } = process.env;

async function call(action, fields) {
  const response = await fetch(`${BASE_URL}/action/${action}`, {
    method: "POST",
    headers: {
      "Content-Type": "application/ejson",
      Accept: "application/ejson",
      apiKey: API_KEY,
    },
    body: JSON.stringify({
      dataSource: "Cluster0",
      database: "todo",
      collection: "notes",
      ...fields,
    }),
  });
  if (!response.ok) {
    throw new Error(`${action}: ${response.status} ${await response.text()}`);
  }
  return response.json();
}

const { insertedId } = await call("insertOne", {
  document: {
    title: "from fetch",
    at: { $date: { $numberLong: "1700000000000" } },
    views: { $numberLong: "9007199254740993" },
  },
});
const { document } = await call("findOne", { filter: { _id: insertedId } });
const updated = await call("updateOne", {
  filter: { _id: insertedId },
  update: { $inc: { views: { $numberLong: "1" } } },
});
const deleted = await call("deleteOne", { filter: { _id: insertedId } });
console.log(JSON.stringify({ insertedId, document, updated, deleted }));
