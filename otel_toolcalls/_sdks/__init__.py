"""What the provider adapters share about their SDKs' objects: the patches of the SDKs generated
with Stainless (``stainless``), the object handed back where an SDK returns a bare generator
(``returned``), the server of a client's URL (``servers``). No adapter lives here."""
