#!/bin/sh
# Requests of a client written for the Atlas Data API, in the shape of its
# documentation's curl examples. Only two things point them at the gateway: BASE_URL
# (https://data.mongodb-api.com/app/<app id>/endpoint/data/v1 before) and API_KEY.
# Each response is printed on a line of its own.
set -eu

curl -s --location --request POST "$BASE_URL/action/insertOne" \
  --header 'Content-Type: application/json' \
  --header 'Access-Control-Request-Headers: *' \
  --header "api-key: $API_KEY" \
  --data-raw '{
      "dataSource": "Cluster0",
      "database": "todo",
      "collection": "tasks",
      "document": { "status": "open", "text": "Do the dishes" }
  }'
echo

curl -s --location --request POST "$BASE_URL/action/findOne" \
  --header 'Content-Type: application/json' \
  --header 'Access-Control-Request-Headers: *' \
  --header "api-key: $API_KEY" \
  --data-raw '{
      "dataSource": "Cluster0",
      "database": "todo",
      "collection": "tasks",
      "filter": { "text": "Do the dishes" },
      "projection": { "_id": 0 }
  }'
echo

curl -s --location --request POST "$BASE_URL/action/updateOne" \
  --header 'Content-Type: application/json' \
  --header 'Access-Control-Request-Headers: *' \
  --header "api-key: $API_KEY" \
  --data-raw '{
      "dataSource": "Cluster0",
      "database": "todo",
      "collection": "tasks",
      "filter": { "text": "Do the dishes" },
      "update": { "$set": { "status": "complete" } }
  }'
echo

curl -s --location --request POST "$BASE_URL/action/find" \
  --header 'Content-Type: application/json' \
  --header 'Access-Control-Request-Headers: *' \
  --header "api-key: $API_KEY" \
  --data-raw '{
      "dataSource": "Cluster0",
      "database": "todo",
      "collection": "tasks",
      "filter": { "status": "complete" },
      "projection": { "_id": 0, "text": 1 },
      "sort": { "text": 1 },
      "limit": 10
  }'
echo

curl -s --location --request POST "$BASE_URL/action/deleteMany" \
  --header 'Content-Type: application/json' \
  --header 'Access-Control-Request-Headers: *' \
  --header "api-key: $API_KEY" \
  --data-raw '{
      "dataSource": "Cluster0",
      "database": "todo",
      "collection": "tasks",
      "filter": { "status": "complete" }
  }'
echo
