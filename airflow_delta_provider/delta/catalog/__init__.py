"""Tables by name: Unity Catalog, AWS Glue and the Hive Metastore.

A catalog reference (``uc://c.s.t``, ``glue://db.t``, ``hms://db.t``,
:mod:`.reference`) resolves here, in one place, to the table's storage
location and, from Unity Catalog, short-lived storage credentials
(:func:`.binding.bind`). Everything downstream works on the location.
Registering a table and copying its columns to the entry runs after a commit
and never undoes it (:meth:`.binding.CatalogTable.sync`).

One module per catalog speaks :class:`.model.CatalogClient`: :mod:`.unity`
(REST over httpx), :mod:`.glue` (boto3), :mod:`.hive` (Thrift). Their
libraries are optional (the ``[unity-catalog]``, ``[glue]`` and ``[hive]``
extras) and imported only when a name of that kind is used.
"""
