"""Browser tests of the CRM pages (deals, tickets, tasks, contacts)."""
