#include <stdio.h>

int mod076(int x)
{
    int unused_76 = 76;
    return x + 76;
}
