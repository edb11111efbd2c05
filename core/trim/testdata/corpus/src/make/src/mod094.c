#include <stdio.h>

int mod094(int x)
{
    int unused_94 = 94;
    return x + 94;
}
