"""The API client side: everything that talks to the API server.

The REST client (`rest`: kubernetes-asyncio's configuration, an aiohttp session, raw JSON),
where its configuration comes from (`kubeconfig`), list+watch informers, the event recorder and
leader election: upstream's client-go, as far as the scheduler needs it.
"""
